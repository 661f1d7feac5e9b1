package ipctest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"os"
	"time"

	"github.com/ecoPrimals/primalscope/internal/peer"
)

// HostileHello is what a HostileBTSP server answers to a client hello.
type HostileHello int

const (
	// HelloOK answers a well-formed server hello.
	HelloOK HostileHello = iota
	// HelloCut sends the first half of a server hello and closes.
	HelloCut
	// HelloGarbage answers a line (or frame) of binary garbage and waits.
	HelloGarbage
	// HelloHuge streams a 200 MB message: a line without its newline, or a
	// length prefix announcing 200 MB followed by bytes.
	HelloHuge
	// HelloSilent reads the client hello and never answers it, until the
	// client goes.
	HelloSilent
)

// NegotiateAnswer is how a HostileBTSP server answers btsp.negotiate.
type NegotiateAnswer int

const (
	// NegotiateKeepNull answers "cipher":"null" (the connection stays plaintext).
	NegotiateKeepNull NegotiateAnswer = iota
	// NegotiateClaim answers "chacha20-poly1305" with a server nonce,
	// without being able to derive the keys (an impostor), then answers
	// whatever frame it receives with random bytes in a frame.
	NegotiateClaim
	// NegotiateRefuse answers a JSON-RPC error.
	NegotiateRefuse
)

// HostileBTSP is a BTSP server written from the wire description in
// ECOSYSTEM-FACTS.md (not from this project's btsp package) that misbehaves
// as configured: an impostor that does not know the family seed, a server
// that forces the null cipher, a cut, garbage or huge hello, a wrong
// server_proof. It records every byte each connection sends it, so tests
// can prove what reached the peer. Cleartext JSON-RPC (a line starting
// "{" with "jsonrpc") is answered "BTSP handshake required" and closed.
type HostileBTSP struct {
	// Seed is the family seed; nil makes an impostor that accepts any
	// challenge response and cannot compute server_proof.
	Seed []byte
	// Hello is what it answers to the client hello.
	Hello HostileHello
	// Cipher is the cipher it names in the completion; "" echoes the
	// client's preferred_cipher.
	Cipher string
	// Negotiate is its answer to btsp.negotiate after a JSON-line null handshake.
	Negotiate NegotiateAnswer
	// WrongProof sends a server_proof computed over the public keys in the
	// wrong order (the length-prefixed path), even when it knows the seed.
	WrongProof bool
	// LinesOnly makes a peer that speaks only the JSON-line handshake
	// (primalSpring, biomeOS): a length-prefixed hello is read as the start
	// of a line that never ends, and left waiting until the client goes.
	LinesOnly bool
	// LengthPrefixedOnly makes a peer that closes without a word on a
	// JSON-line hello.
	LengthPrefixedOnly bool
	// BeforeHello, when set, is called after a client hello is read and
	// before it is answered: a test holds the handshake there (to act
	// while the client waits for the server hello).
	BeforeHello func()

	acc  *peer.Acceptor
	path string
	rec  recording
}

// ListenHostileBTSP serves h on a Unix socket at path.
func ListenHostileBTSP(path string, h *HostileBTSP) (*HostileBTSP, error) {
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
func (h *HostileBTSP) Path() string { return h.path }

// Close stops the server, ends every connection and waits for them.
func (h *HostileBTSP) Close() {
	_ = h.acc.Close()
	_ = os.Remove(h.path)
}

// Received returns a copy of the bytes each connection sent, in order of
// connection.
func (h *HostileBTSP) Received() [][]byte { return h.rec.received() }

const hostileMaxMsg = 1 << 20

func (h *HostileBTSP) serve(c net.Conn, rec io.Reader) {
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(rec)
	first, err := br.Peek(1)
	if err != nil {
		return
	}
	lp := false
	if first[0] == 0xEC {
		b, err := br.Peek(2)
		if err != nil {
			return
		}
		_, _ = br.Discard(2)
		switch b[1] {
		case 0x02:
			lp = true
		case 0x03:
		default:
			_, _ = c.Write([]byte(ParseErrorLine + "\n"))
			return
		}
	} else if first[0] != '{' {
		lp = true
	}
	switch {
	case lp && h.LinesOnly:
		_, _ = io.Copy(io.Discard, br) // a line that never ends: waits for the client to go
		return
	case !lp && h.LengthPrefixedOnly:
		return
	}
	readMsg := func() (map[string]json.RawMessage, []byte, bool) {
		var raw []byte
		if lp {
			var hdr [4]byte
			if _, err := io.ReadFull(br, hdr[:]); err != nil {
				return nil, nil, false
			}
			n := binary.BigEndian.Uint32(hdr[:])
			if n > hostileMaxMsg {
				return nil, nil, false
			}
			raw = make([]byte, n)
			if _, err := io.ReadFull(br, raw); err != nil {
				return nil, nil, false
			}
		} else {
			line, err := br.ReadBytes('\n')
			if err != nil || len(line) > hostileMaxMsg {
				return nil, nil, false
			}
			raw = line
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return nil, raw, false
		}
		return m, raw, true
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

	hello, _, ok := readMsg()
	if !ok {
		return
	}
	if _, rpc := hello["jsonrpc"]; rpc {
		_, _ = c.Write([]byte(BTSPRequiredLine + "\n"))
		return
	}
	var clientPubB64 string
	_ = json.Unmarshal(hello["client_ephemeral_pub"], &clientPubB64)
	clientPub, _ := base64.StdEncoding.DecodeString(clientPubB64)
	if h.BeforeHello != nil {
		h.BeforeHello()
	}

	switch h.Hello {
	case HelloSilent:
		_, _ = io.Copy(io.Discard, br) // waits for the client to go
		return
	case HelloCut:
		_, _ = c.Write([]byte(`{"version":1,"server_ephemeral_pub":"` + base64.StdEncoding.EncodeToString(randBytes(32))[:20]))
		return
	case HelloGarbage:
		g := append(randBytes(200), '\n')
		if lp {
			g = append(binary.BigEndian.AppendUint32(nil, 200), g[:200]...)
		}
		_, _ = c.Write(g)
		_, _ = io.Copy(io.Discard, br) // waits for the client to go
		return
	case HelloHuge:
		const huge = 200 << 20
		if lp {
			_, _ = c.Write(binary.BigEndian.AppendUint32(nil, huge))
		} else {
			_, _ = c.Write([]byte(`{"version":1,"server_ephemeral_pub":"`))
		}
		chunk := bytes.Repeat([]byte("A"), 64<<10)
		for sent := 0; sent < huge; sent += len(chunk) {
			_ = c.SetWriteDeadline(time.Now().Add(2 * time.Second))
			if _, err := c.Write(chunk); err != nil {
				return // the client stopped reading
			}
		}
		return
	}

	serverPub, challenge := randBytes(32), randBytes(32)
	sid := hex.EncodeToString(randBytes(16))
	sh := map[string]any{"version": 1, "server_ephemeral_pub": base64.StdEncoding.EncodeToString(serverPub),
		"challenge": base64.StdEncoding.EncodeToString(challenge)}
	if !lp {
		sh["session_id"] = sid
	}
	if !send(sh) {
		return
	}
	resp, _, ok := readMsg()
	if !ok {
		return
	}
	var hk []byte
	if h.Seed != nil {
		hk, _ = hkdf.Key(sha256.New, h.Seed, []byte("btsp-v1"), "handshake", 32)
		var respB64 string
		_ = json.Unmarshal(resp["response"], &respB64)
		got, _ := base64.StdEncoding.DecodeString(respB64)
		if !hmac.Equal(got, hmacSum(hk, challenge, clientPub, serverPub)) {
			send(map[string]string{"error": "handshake_failed", "reason": "family_verification"})
			return
		}
	}
	cipher := h.Cipher
	if cipher == "" {
		_ = json.Unmarshal(resp["preferred_cipher"], &cipher)
	}
	if lp {
		proof := randBytes(32) // an impostor cannot compute it
		if hk != nil {
			if h.WrongProof {
				proof = hmacSum(hk, challenge, clientPub, serverPub)
			} else {
				proof = hmacSum(hk, challenge, serverPub, clientPub)
			}
		}
		if !send(map[string]string{"cipher": cipher, "session_id": sid, "server_proof": base64.StdEncoding.EncodeToString(proof)}) {
			return
		}
	} else if !send(map[string]string{"status": "ok", "session_id": sid, "cipher": cipher}) {
		return
	}

	if lp || (cipher != "null" && cipher != "") {
		// A real cipher: it reads frames it may or may not decrypt, and
		// answers each with random bytes in a frame.
		h.answerFrames(c, br)
		return
	}
	// JSON-line null: plain NDJSON from here.
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return
		}
		var m struct {
			Method string          `json:"method"`
			ID     json.RawMessage `json:"id"`
		}
		if json.Unmarshal(line, &m) != nil || m.ID == nil {
			continue
		}
		if m.Method == "btsp.negotiate" {
			switch h.Negotiate {
			case NegotiateKeepNull:
				_, _ = c.Write([]byte(`{"jsonrpc":"2.0","result":{"cipher":"null"},"id":` + string(m.ID) + "}\n"))
				continue
			case NegotiateRefuse:
				_, _ = c.Write([]byte(`{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":` + string(m.ID) + "}\n"))
				continue
			}
			_, _ = c.Write([]byte(`{"jsonrpc":"2.0","result":{"cipher":"chacha20-poly1305","server_nonce":"` +
				base64.StdEncoding.EncodeToString(randBytes(32)) + `"},"id":` + string(m.ID) + "}\n"))
			h.answerFrames(c, br)
			return
		}
		// Cleartext JSON-RPC through the "session": it is answered, so a
		// client that sent it believes the call worked.
		_, _ = c.Write([]byte(`{"jsonrpc":"2.0","result":{"status":"alive","impostor":true},"id":` + string(m.ID) + "}\n"))
	}
}

// answerFrames reads [u32 length][body] frames and answers each with a
// frame of random bytes (the size of a nonce, a short message and a tag).
func (h *HostileBTSP) answerFrames(c net.Conn, br *bufio.Reader) {
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n > hostileMaxMsg {
			return
		}
		if _, err := io.CopyN(io.Discard, br, int64(n)); err != nil {
			return
		}
		if _, err := c.Write(append(binary.BigEndian.AppendUint32(nil, 60), randBytes(60)...)); err != nil {
			return
		}
	}
}

func hmacSum(key []byte, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

func randBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
