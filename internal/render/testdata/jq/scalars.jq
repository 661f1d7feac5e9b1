1
"two"
true
false
null
-0.5
[]
{}
{
  "method": "heartbeat",
  "params": {
    "seq": 1
  }
}
{
  "method": "heartbeat",
  "params": {
    "seq": 2
  }
}
