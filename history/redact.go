package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Redacted replaces the value of every member whose key looks secret.
const Redacted = "[redacted]"

// maxRedactDepth bounds the nesting the redactor walks; deeper documents are
// refused (and so never stored as they are).
const maxRedactDepth = 1000

// secretWords are matched anywhere in a key once it is lower-cased and
// stripped of everything but letters and digits.
var secretWords = []string{
	"seed", "secret", "password", "passwd", "passphrase", "pwd", "token",
	"privatekey", "privkey", "apikey", "keymaterial", "credential", "mnemonic",
	"cookie", "psk",
}

// notSecret are keys that contain a secret word but count things (language
// model token counts), compared after normalising.
var notSecret = map[string]bool{
	"maxtokens": true, "maxnewtokens": true, "mintokens": true, "numtokens": true,
	"totaltokens": true, "inputtokens": true, "outputtokens": true, "prompttokens": true,
	"completiontokens": true, "tokencount": true, "tokenlimit": true, "tokenizer": true,
	"tokensused": true, "usedtokens": true,
}

// secretKeyPrefixes are the words that, before "key", make a key secret
// ("sessionkey", "signing_key", "MacKey"...). A bare "key" is not secret: it
// is what storage-style methods call their lookup key.
var secretKeyPrefixes = []string{
	"private", "priv", "secret", "session", "signing", "sign", "master", "mac",
	"hmac", "enc", "encryption", "shared", "symmetric", "family", "btsp", "aead",
	"cipher", "client", "server", "ephemeral", "access", "refresh", "root",
}

// IsSecretKey reports whether a JSON object key looks like it holds a secret:
// seeds, secrets, passwords, tokens, private keys, API keys, key material,
// credentials and anything starting with "auth" (but not "author"), compared
// case-insensitively and ignoring '_', '-', '.' and other punctuation.
func IsSecretKey(key string) bool {
	var b strings.Builder
	for _, r := range strings.ToLower(key) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r > 0x7f {
			b.WriteRune(r)
		}
	}
	n := b.String()
	if n == "" || notSecret[n] {
		return false
	}
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	if strings.HasPrefix(n, "auth") {
		// "author", "authors", "authored" name people, not credentials;
		// "authorization" and "authority" tokens do not.
		if strings.HasPrefix(n, "author") && !strings.HasPrefix(n, "authoriz") && !strings.HasPrefix(n, "authorit") {
			return false
		}
		return true
	}
	if strings.HasSuffix(n, "key") || strings.HasSuffix(n, "keys") {
		stem := strings.TrimSuffix(strings.TrimSuffix(n, "s"), "key")
		for _, p := range secretKeyPrefixes {
			if strings.HasSuffix(stem, p) {
				return true
			}
		}
	}
	return false
}

// ErrTooDeep is returned by Redact for documents nested deeper than it walks.
var ErrTooDeep = errors.New("JSON nested too deeply")

// Redact returns doc with the value of every object member whose key looks
// secret (IsSecretKey) replaced by the string "[redacted]", at any depth,
// including objects inside arrays. The result is compact JSON with member
// order kept. changed reports whether anything was redacted. An empty doc is
// returned as is. Invalid JSON is an error, and then nothing of doc is
// returned.
func Redact(doc []byte) (out []byte, changed bool, err error) {
	if len(bytes.TrimSpace(doc)) == 0 {
		return nil, false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	r := redactor{dec: dec}
	r.buf.Grow(len(doc))
	if err := r.value(0); err != nil {
		return nil, false, fmt.Errorf("redact: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false, errors.New("redact: data after the JSON value")
	}
	return r.buf.Bytes(), r.changed, nil
}

type redactor struct {
	dec     *json.Decoder
	buf     bytes.Buffer
	changed bool
}

func (r *redactor) value(depth int) error {
	if depth > maxRedactDepth {
		return ErrTooDeep
	}
	tok, err := r.dec.Token()
	if err != nil {
		if err == io.EOF {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			r.buf.WriteByte('{')
			first := true
			for r.dec.More() {
				ktok, err := r.dec.Token()
				if err != nil {
					return err
				}
				key, ok := ktok.(string)
				if !ok {
					return errors.New("object key is not a string")
				}
				if !first {
					r.buf.WriteByte(',')
				}
				first = false
				writeString(&r.buf, key)
				r.buf.WriteByte(':')
				if IsSecretKey(key) {
					if err := r.skip(depth + 1); err != nil {
						return err
					}
					writeString(&r.buf, Redacted)
					r.changed = true
					continue
				}
				if err := r.value(depth + 1); err != nil {
					return err
				}
			}
			if _, err := r.dec.Token(); err != nil { // '}'
				return err
			}
			r.buf.WriteByte('}')
		case '[':
			r.buf.WriteByte('[')
			first := true
			for r.dec.More() {
				if !first {
					r.buf.WriteByte(',')
				}
				first = false
				if err := r.value(depth + 1); err != nil {
					return err
				}
			}
			if _, err := r.dec.Token(); err != nil { // ']'
				return err
			}
			r.buf.WriteByte(']')
		default:
			return fmt.Errorf("unexpected %v", t)
		}
	case string:
		writeString(&r.buf, t)
	case json.Number:
		r.buf.WriteString(t.String())
	case bool:
		if t {
			r.buf.WriteString("true")
		} else {
			r.buf.WriteString("false")
		}
	case nil:
		r.buf.WriteString("null")
	default:
		return fmt.Errorf("unexpected token %T", tok)
	}
	return nil
}

// skip consumes one value without writing it.
func (r *redactor) skip(depth int) error {
	level := 0
	for {
		if depth+level > maxRedactDepth {
			return ErrTooDeep
		}
		tok, err := r.dec.Token()
		if err != nil {
			if err == io.EOF {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				level++
			case '}', ']':
				level--
			}
		}
		if level == 0 {
			return nil
		}
	}
}

// writeString writes s as a JSON string without HTML escaping.
func writeString(buf *bytes.Buffer, s string) {
	var tmp bytes.Buffer
	enc := json.NewEncoder(&tmp)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // strings always encode
	buf.Write(bytes.TrimSuffix(tmp.Bytes(), []byte{'\n'}))
}

// HasRedacted reports whether doc holds a value the redactor replaced.
func HasRedacted(doc []byte) bool {
	return bytes.Contains(doc, []byte(`"`+Redacted+`"`))
}
