package paths

import "testing"

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaultsUnderHome(t *testing.T) {
	g := env(map[string]string{"HOME": "/home/u"})
	for name, got := range map[string]string{
		"/home/u/.config/primalscope/config.toml":          ConfigFile(g),
		"/home/u/.config/primalscope/themes":               ThemesDir(g),
		"/home/u/.local/state/primalscope/history.db":      HistoryFile(g),
		"/home/u/.cache/primalscope/complete-targets.json": CompletionCacheFile(g),
		"": RuntimeDir(g),
	} {
		if got != name {
			t.Errorf("got %q, want %q", got, name)
		}
	}
}

func TestXDGOverridesHome(t *testing.T) {
	g := env(map[string]string{"HOME": "/home/u", "XDG_CONFIG_HOME": "/cfg/", "XDG_STATE_HOME": "/st",
		"XDG_CACHE_HOME": "/ca", "XDG_RUNTIME_DIR": "/run/user/1"})
	for want, got := range map[string]string{
		"/cfg/primalscope/config.toml":          ConfigFile(g),
		"/cfg/primalscope/themes":               ThemesDir(g),
		"/st/primalscope/history.db":            HistoryFile(g),
		"/ca/primalscope/complete-targets.json": CompletionCacheFile(g),
		"/run/user/1":                           RuntimeDir(g),
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

// A relative XDG_* value is invalid (the specification says to ignore it):
// every reader falls back to the same default, so the config file and the
// themes are looked for in one place.
func TestRelativeIgnored(t *testing.T) {
	g := env(map[string]string{"HOME": "/home/u", "XDG_CONFIG_HOME": "cfg", "XDG_STATE_HOME": "./st",
		"XDG_CACHE_HOME": "ca", "XDG_RUNTIME_DIR": "run"})
	if got := ConfigFile(g); got != "/home/u/.config/primalscope/config.toml" {
		t.Error(got)
	}
	if got := HistoryFile(g); got != "/home/u/.local/state/primalscope/history.db" {
		t.Error(got)
	}
	if got := CacheDir(g); got != "/home/u/.cache/primalscope" {
		t.Error(got)
	}
	if got := RuntimeDir(g); got != "" {
		t.Error(got)
	}
}

func TestNoHome(t *testing.T) {
	for _, g := range []func(string) string{env(nil), env(map[string]string{"HOME": "home/u"})} {
		if ConfigFile(g) != "" || ThemesDir(g) != "" || HistoryFile(g) != "" || CompletionCacheFile(g) != "" || Home(g) != "" {
			t.Errorf("without an absolute HOME: %q %q %q", ConfigFile(g), HistoryFile(g), CompletionCacheFile(g))
		}
	}
	// XDG alone is enough.
	if got := ConfigFile(env(map[string]string{"XDG_CONFIG_HOME": "/c"})); got != "/c/primalscope/config.toml" {
		t.Error(got)
	}
}
