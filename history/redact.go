package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
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
	"cookie", "psk", "jwt", "bearer", "sessionid", "authorization",
}

// secretWholeWords are secret only as a whole word of the key (split at
// separators and camelCase humps): "pin" and "userPin" but not "ping" or
// "mapping", "pass" and "db_pass" but not "passenger" or "bypass".
var secretWholeWords = map[string]bool{
	"pin": true, "pins": true, "pincode": true, "otp": true, "totp": true, "hotp": true,
	"pass": true, "passcode": true, "auth": true, "oauth": true, "sid": true,
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
// seeds, secrets, passwords and passphrases, tokens (access, refresh, JWT,
// bearer), private and API keys, key material, credentials, cookies, session
// ids, PINs and one-time passwords, and anything starting with "auth" (but
// not "author"). Keys are compared case-insensitively and ignoring '_', '-',
// '.', spaces and other punctuation, so "api_key", "apiKey", "X-API-KEY" and
// "x.api key" are one key. Short words (pin, otp, pass, auth, sid) count
// only as a whole word of the key: "userPin", "otp_code", "db.pass" are
// secret, "ping", "mapping" and "passenger" are not.
func IsSecretKey(key string) bool {
	var buf [64]byte
	n := buf[:0]
	var words [8][2]int // start and end of each word in n
	nw := 0
	start := 0
	var prev rune
	rs := []rune(key)
	for i, r := range rs {
		lower := unicode.ToLower(r)
		alnum := (lower >= 'a' && lower <= 'z') || (lower >= '0' && lower <= '9') || r > 0x7f && (unicode.IsLetter(r) || unicode.IsDigit(r))
		if !alnum {
			if len(n) > start && nw < len(words) {
				words[nw] = [2]int{start, len(n)}
				nw++
			}
			start = len(n)
			prev = 0
			continue
		}
		// A camelCase hump starts a word: "userPin", "PINCode" (the last
		// capital of a run starts the next word when a small letter follows).
		if len(n) > start && unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev) ||
			unicode.IsUpper(prev) && i+1 < len(rs) && unicode.IsLower(rs[i+1])) {
			if nw < len(words) {
				words[nw] = [2]int{start, len(n)}
				nw++
			}
			start = len(n)
		}
		n = utf8.AppendRune(n, lower)
		prev = r
	}
	if len(n) > start && nw < len(words) {
		words[nw] = [2]int{start, len(n)}
		nw++
	}
	ns := string(n)
	if ns == "" || notSecret[ns] {
		return false
	}
	for _, w := range secretWords {
		if strings.Contains(ns, w) {
			return true
		}
	}
	for _, w := range words[:nw] {
		if secretWholeWords[ns[w[0]:w[1]]] {
			return true
		}
	}
	if strings.HasPrefix(ns, "auth") {
		// "author", "authors", "authored" name people, not credentials;
		// "authorization" and "authority" tokens do not.
		if strings.HasPrefix(ns, "author") && !strings.HasPrefix(ns, "authoriz") && !strings.HasPrefix(ns, "authorit") {
			return false
		}
		return true
	}
	if strings.HasSuffix(ns, "key") || strings.HasSuffix(ns, "keys") {
		stem := strings.TrimSuffix(strings.TrimSuffix(ns, "s"), "key")
		for _, p := range secretKeyPrefixes {
			if strings.HasSuffix(stem, p) {
				return true
			}
		}
	}
	return false
}

// notSecretEnv are environment variables whose names look secret but whose
// values are not: the shell's working directories (PWD reads as a
// password's abbreviation) and the SSH agent's socket path.
var notSecretEnv = map[string]bool{"PWD": true, "OLDPWD": true, "SSH_AUTH_SOCK": true}

// IsSecretEnv reports whether an environment variable holds a secret: a
// family seed (FAMILY_SEED, any *_SEED) or a secret-looking name
// (IsSecretKey: *_TOKEN, *_PASSWORD, ...), but not PWD, OLDPWD or
// SSH_AUTH_SOCK (a report hiding the working directory hides every path).
func IsSecretEnv(name string) bool {
	if notSecretEnv[name] {
		return false
	}
	return strings.HasSuffix(name, "_SEED") || name == "FAMILY_SEED" || IsSecretKey(name)
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

// token reads the next token at depth: ErrTooDeep past maxRedactDepth,
// io.ErrUnexpectedEOF where the document ends.
func (r *redactor) token(depth int) (json.Token, error) {
	if depth > maxRedactDepth {
		return nil, ErrTooDeep
	}
	tok, err := r.dec.Token()
	if err == io.EOF {
		return nil, io.ErrUnexpectedEOF
	}
	return tok, err
}

func (r *redactor) value(depth int) error {
	tok, err := r.token(depth)
	if err != nil {
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
		tok, err := r.token(depth + level)
		if err != nil {
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

// pathKeyRE finds the object keys of a jq-style path (".a.b", `.["odd key"]`).
// It is compiled on first use: a call's record never needs it.
var pathKeyRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\.([A-Za-z_][A-Za-z0-9_]*)|\["((?:[^"\\]|\\.)*)"\]`) })

// SecretPath reports whether a jq-style path (a Change's Path) passes
// through an object key that looks secret (IsSecretKey), so the value there
// must not be shown.
func SecretPath(path string) bool {
	for _, m := range pathKeyRE().FindAllStringSubmatch(path, -1) {
		k := m[1]
		if k == "" {
			k = m[2]
			var u string
			if json.Unmarshal([]byte(`"`+k+`"`), &u) == nil {
				k = u // the key as the document has it, escapes undone
			}
		}
		if IsSecretKey(k) {
			return true
		}
	}
	return false
}
