package ipctest

import (
	"bufio"
	"context"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/curve25519"

	"github.com/ecoPrimals/primalscope/internal/peer"
)

// SessionFault is how a HostileSession breaks its session after the
// handshake, in the frame that answers a request.
type SessionFault int

const (
	// FaultNone answers every request correctly.
	FaultNone SessionFault = iota
	// FaultFlip flips one byte of the answer's ciphertext.
	FaultFlip
	// FaultWrongKey seals the answer with the client-to-server key (the
	// wrong direction's).
	FaultWrongKey
	// FaultForged sends a frame of random bytes in place of the answer.
	FaultForged
	// FaultCleartext sends the answer as a cleartext JSON line.
	FaultCleartext
	// FaultReplay sends again, byte for byte, the valid frame it sent just
	// before (the notification), in place of the answer.
	FaultReplay
)

// HostileSession is a BTSP server that holds the family seed and completes
// a correct handshake, then breaks the session: to each request it first
// sends a valid notification frame ({"method":"heartbeat"}: the session's
// first frame authenticates), then, in place of the answer, a frame broken
// as Fault says. It is written from the wire description in
// ECOSYSTEM-FACTS.md (keys, nonces, framings), not from this project's btsp
// package. It speaks both paths the spec names:
//
//   - JSON-line handshake (EC 03 or a line starting "{"), cipher null, then
//     the btsp.negotiate upgrade: random-nonce chacha20-poly1305 frames,
//     keys from HKDF(salt = client_nonce || server_nonce, ikm = handshake key).
//   - length-prefixed handshake (EC 02 or a u32 length), cipher
//     chacha20_poly1305 with server_proof: counter-nonce frames, keys from
//     HKDF(salt "btsp-session-v1", X25519, info = session id).
//
// Received records every byte each connection sent.
type HostileSession struct {
	// Seed is the family seed (its raw bytes, as BearDog takes FAMILY_SEED).
	Seed []byte
	// Fault is how the answers break.
	Fault SessionFault
	// LengthPrefixedOnly closes without a word on a JSON-line hello, so a
	// client takes the counter path.
	LengthPrefixedOnly bool
	// PushAfter, when set, breaks the session unprompted: that long after
	// the handshake it sends a valid notification frame
	// ({"method":"ledger.tick"}) and then a frame broken as Fault says,
	// with no request asked (an event stream refused mid-way). Requests
	// are read only after it.
	PushAfter time.Duration

	acc  *peer.Acceptor
	path string
	rec  recording

	mu       sync.Mutex
	requests int
}

// ListenHostileSession serves h on a Unix socket at path.
func ListenHostileSession(path string, h *HostileSession) (*HostileSession, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	h.path = path
	h.acc = peer.Serve(ln, func(_ context.Context, c net.Conn) {
		_, rec := h.rec.tee(c)
		h.serve(c, rec)
	})
	return h, nil
}

// Path is the socket's path.
func (h *HostileSession) Path() string { return h.path }

// Close stops the server, ends every connection and waits for them.
func (h *HostileSession) Close() {
	_ = h.acc.Close()
	_ = os.Remove(h.path)
}

// Received returns a copy of the bytes each connection sent.
func (h *HostileSession) Received() [][]byte { return h.rec.received() }

// Requests is how many JSON-RPC requests came through an established
// session (decrypted).
func (h *HostileSession) Requests() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.requests
}

// sessionWire is one direction-keyed encrypted session, server side.
type sessionWire struct {
	c        net.Conn
	br       *bufio.Reader
	counter  bool // counter nonces (length-prefixed path); else random
	rd, wr   cipher.AEAD
	wrongDir cipher.AEAD // the client-to-server key, for FaultWrongKey
	rctr     uint64
	wctr     uint64
}

func (w *sessionWire) nonce() []byte {
	n := make([]byte, 12)
	if w.counter {
		binary.BigEndian.PutUint64(n[4:], w.wctr)
		w.wctr++
	} else {
		copy(n, randBytes(12))
	}
	return n
}

func (w *sessionWire) frame(a cipher.AEAD, msg []byte) []byte {
	n := w.nonce()
	body := a.Seal(n, n, msg, nil)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func (w *sessionWire) read() ([]byte, bool) {
	var hdr [4]byte
	if _, err := io.ReadFull(w.br, hdr[:]); err != nil {
		return nil, false
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n < 28 || n > hostileMaxMsg {
		return nil, false
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(w.br, body); err != nil {
		return nil, false
	}
	if w.counter {
		if binary.BigEndian.Uint64(body[4:12]) != w.rctr {
			return nil, false
		}
		w.rctr++
	}
	msg, err := w.rd.Open(nil, body[:12], body[12:], nil)
	return msg, err == nil
}

func (h *HostileSession) serve(c net.Conn, rec io.Reader) {
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(rec)
	first, err := br.Peek(1)
	if err != nil {
		return
	}
	lp := first[0] != '{'
	if first[0] == 0xEC {
		b, err := br.Peek(2)
		if err != nil {
			return
		}
		_, _ = br.Discard(2)
		lp = b[1] == 0x02
	}
	if !lp && h.LengthPrefixedOnly {
		return
	}
	readMsg := func() map[string]json.RawMessage {
		var raw []byte
		if lp {
			var hdr [4]byte
			if _, err := io.ReadFull(br, hdr[:]); err != nil {
				return nil
			}
			n := binary.BigEndian.Uint32(hdr[:])
			if n > hostileMaxMsg {
				return nil
			}
			raw = make([]byte, n)
			if _, err := io.ReadFull(br, raw); err != nil {
				return nil
			}
		} else {
			line, err := br.ReadBytes('\n')
			if err != nil {
				return nil
			}
			raw = line
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return nil
		}
		return m
	}
	send := func(v any) bool {
		b, _ := json.Marshal(v)
		if lp {
			b = append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
		} else {
			b = append(b, '\n')
		}
		_, err := c.Write(b)
		return err == nil
	}
	b64 := base64.StdEncoding.EncodeToString
	str := func(m map[string]json.RawMessage, k string) []byte {
		var s string
		_ = json.Unmarshal(m[k], &s)
		b, _ := base64.StdEncoding.DecodeString(s)
		return b
	}

	hello := readMsg()
	if hello == nil {
		return
	}
	if _, rpc := hello["jsonrpc"]; rpc {
		_, _ = c.Write([]byte(BTSPRequiredLine + "\n"))
		return
	}
	clientPub := str(hello, "client_ephemeral_pub")
	secret := randBytes(32)
	serverPub, _ := curve25519.X25519(secret, curve25519.Basepoint)
	challenge := randBytes(32)
	sid := hex.EncodeToString(randBytes(16))
	sh := map[string]any{"version": 1, "server_ephemeral_pub": b64(serverPub), "challenge": b64(challenge)}
	if !lp {
		sh["session_id"] = sid
	}
	if !send(sh) {
		return
	}
	resp := readMsg()
	if resp == nil {
		return
	}
	hk, _ := hkdf.Key(sha256.New, h.Seed, []byte("btsp-v1"), "handshake", 32)
	if !hmac.Equal(str(resp, "response"), hmacSum(hk, challenge, clientPub, serverPub)) {
		send(map[string]string{"error": "handshake_failed", "reason": "family_verification"})
		return
	}
	w := &sessionWire{c: c, br: br}
	if lp {
		shared, err := curve25519.X25519(secret, clientPub)
		if err != nil {
			return
		}
		keys, _ := hkdf.Key(sha256.New, shared, []byte("btsp-session-v1"), sid, 64)
		if !send(map[string]string{"cipher": "chacha20_poly1305", "session_id": sid,
			"server_proof": b64(hmacSum(hk, challenge, serverPub, clientPub))}) {
			return
		}
		w.counter = true
		w.wr, _ = chacha20poly1305.New(keys[:32])
		w.rd, _ = chacha20poly1305.New(keys[32:])
		w.wrongDir = w.rd
	} else {
		if !send(map[string]string{"status": "ok", "session_id": sid, "cipher": "null"}) {
			return
		}
		line, err := br.ReadBytes('\n')
		if err != nil {
			return
		}
		var neg struct {
			Method string          `json:"method"`
			ID     json.RawMessage `json:"id"`
			Params struct {
				ClientNonce string `json:"client_nonce"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &neg) != nil || neg.Method != "btsp.negotiate" {
			return
		}
		cn, _ := base64.StdEncoding.DecodeString(neg.Params.ClientNonce)
		sn := randBytes(32)
		if _, err := c.Write([]byte(`{"jsonrpc":"2.0","result":{"cipher":"chacha20-poly1305","server_nonce":"` +
			b64(sn) + `"},"id":` + string(neg.ID) + "}\n")); err != nil {
			return
		}
		salt := append(append([]byte(nil), cn...), sn...)
		c2s, _ := hkdf.Key(sha256.New, hk, salt, "btsp-session-v1-c2s", 32)
		s2c, _ := hkdf.Key(sha256.New, hk, salt, "btsp-session-v1-s2c", 32)
		w.wr, _ = chacha20poly1305.New(s2c)
		w.rd, _ = chacha20poly1305.New(c2s)
		w.wrongDir = w.rd
	}
	h.session(w)
}

// session answers requests inside the encrypted session as Fault says.
func (h *HostileSession) session(w *sessionWire) {
	if h.PushAfter > 0 {
		time.Sleep(h.PushAfter)
		note := w.frame(w.wr, []byte(`{"jsonrpc":"2.0","method":"ledger.tick","params":{}}`))
		tick := []byte(`{"jsonrpc":"2.0","method":"ledger.tick","params":{"n":2}}`)
		if _, err := w.c.Write(append(note, h.broken(w, note, tick)...)); err != nil {
			return
		}
	}
	for {
		msg, ok := w.read()
		if !ok {
			return
		}
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(msg, &req) != nil || req.ID == nil {
			continue
		}
		h.mu.Lock()
		h.requests++
		h.mu.Unlock()
		note := w.frame(w.wr, []byte(`{"jsonrpc":"2.0","method":"heartbeat","params":{}}`))
		answer := []byte(`{"jsonrpc":"2.0","result":{"status":"alive"},"id":` + string(req.ID) + `}`)
		out := h.broken(w, note, answer)
		if _, err := w.c.Write(append(note, out...)); err != nil {
			return
		}
	}
}

// broken is msg framed as Fault says (note is the valid frame sent just
// before it, which FaultReplay sends again).
func (h *HostileSession) broken(w *sessionWire, note, msg []byte) []byte {
	var out []byte
	switch h.Fault {
	case FaultNone:
		out = w.frame(w.wr, msg)
	case FaultFlip:
		out = w.frame(w.wr, msg)
		out[len(out)-20] ^= 0x01 // inside the ciphertext
	case FaultWrongKey:
		out = w.frame(w.wrongDir, msg)
	case FaultForged:
		body := randBytes(12 + len(msg) + 16)
		if w.counter {
			copy(body[:12], w.nonce()) // the right counter, a forged body
		}
		out = append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	case FaultCleartext:
		out = append(msg, '\n')
	case FaultReplay:
		out = note
	}
	return out
}
