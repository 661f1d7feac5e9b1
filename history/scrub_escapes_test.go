package history

import (
	"encoding/json"
	"strings"
	"testing"
)

// A secret echoed by a peer whose JSON encoder escapes more than ours is
// found all the same: Go's json.Marshal (<, >, & as \u003c…), Python's
// ensure_ascii (non-ASCII as \u escapes, either case, surrogate pairs),
// PHP's json_encode (/ as \/). A reader decoding the report would
// otherwise get it back.
func TestScrubFindsSecretsEscapedAsPeersEscapeThem(t *testing.T) {
	secrets := []string{"pa&ss<word>", "café-secret", "a/b/secret", "key-😀-long"}
	docs := []string{
		`{"a":"pa\u0026ss\u003cword\u003e"}`,
		`{"a":"caf\u00e9-secret"}`,
		`{"a":"caf\u00E9-secret"}`,
		`{"a":"a\/b\/secret"}`,
		`{"a":"key-\ud83d\ude00-long"}`,
		`{"a":"key-\uD83D\uDE00-long"}`,
	}
	for _, d := range docs {
		var v struct{ A string }
		if err := json.Unmarshal([]byte(d), &v); err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		got := ScrubJSON([]byte(d), secrets)
		if !json.Valid(got) || !strings.Contains(string(got), Redacted) {
			t.Errorf("ScrubJSON(%s) = %s: the secret %q is still there", d, got, v.A)
		}
		if txt := ScrubText("saw "+d, secrets); !strings.Contains(txt, Redacted) {
			t.Errorf("ScrubText(%s) = %s: the secret %q is still there", d, txt, v.A)
		}
	}
}
