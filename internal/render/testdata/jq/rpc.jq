{
  "jsonrpc": "2.0",
  "id": 7,
  "result": {
    "primal": "beardog",
    "version": "0.9.0",
    "capabilities": [
      "crypto.sign_ed25519",
      "crypto.verify_ed25519",
      "btsp.handshake"
    ],
    "health": {
      "ok": true,
      "uptime_s": 12345,
      "load": 0.25,
      "degraded": false,
      "note": null
    },
    "empty_obj": {},
    "empty_arr": [],
    "nested": [
      [],
      [
        {}
      ],
      {
        "a": [
          1,
          2,
          {
            "b": null
          }
        ]
      }
    ]
  }
}
