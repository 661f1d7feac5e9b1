package history

import "testing"

func TestSecretPath(t *testing.T) {
	for path, want := range map[string]bool{
		".password":                  true,
		".auth.user":                 true,
		".items[3].api_key":          true,
		`.["X-API-KEY"]`:             true,
		`.["pass\u0077ord"]`:         true,
		".user":                      false,
		".mapping[0].ping":           false,
		".":                          false,
		`.["author"].name`:           false,
		".config.credentials[].host": true,
	} {
		if got := SecretPath(path); got != want {
			t.Errorf("SecretPath(%q) = %v, want %v", path, got, want)
		}
	}
}
