// Package paths says where primalscope keeps its files, after the XDG Base
// Directory specification: the config file and user themes under
// $XDG_CONFIG_HOME, the history and endpoint memory under $XDG_STATE_HOME,
// the completion cache under $XDG_CACHE_HOME, and the runtime directory
// $XDG_RUNTIME_DIR where primals put their sockets.
//
// Every function reads the environment through the getenv it is given
// (os.Getenv in production), so tests inject their own. As the
// specification requires, a relative XDG_* value is invalid and ignored:
// the default under $HOME is used instead. A relative $HOME is ignored too.
// A function returns "" when there is no valid directory at all; callers
// then do without the file (or say that they cannot find it).
package paths

import "path/filepath"

// App is the directory primalscope uses below each base directory.
const App = "primalscope"

// Names of the files primalscope keeps.
const (
	ConfigFileName  = "config.toml"
	ThemesDirName   = "themes"
	HistoryFileName = "history.db"
	CompletionName  = "complete-targets.json"
)

// abs returns getenv(key) when it is an absolute path, else "".
func abs(getenv func(string) string, key string) string {
	if d := getenv(key); d != "" && filepath.IsAbs(d) {
		return filepath.Clean(d)
	}
	return ""
}

// base returns the XDG base directory key, else $HOME joined with def.
func base(getenv func(string) string, key string, def ...string) string {
	if d := abs(getenv, key); d != "" {
		return d
	}
	if h := Home(getenv); h != "" {
		return filepath.Join(append([]string{h}, def...)...)
	}
	return ""
}

// Home returns $HOME when it is absolute, else "".
func Home(getenv func(string) string) string { return abs(getenv, "HOME") }

// ConfigHome returns $XDG_CONFIG_HOME, else $HOME/.config.
func ConfigHome(getenv func(string) string) string {
	return base(getenv, "XDG_CONFIG_HOME", ".config")
}

// StateHome returns $XDG_STATE_HOME, else $HOME/.local/state.
func StateHome(getenv func(string) string) string {
	return base(getenv, "XDG_STATE_HOME", ".local", "state")
}

// CacheHome returns $XDG_CACHE_HOME, else $HOME/.cache.
func CacheHome(getenv func(string) string) string {
	return base(getenv, "XDG_CACHE_HOME", ".cache")
}

// RuntimeDir returns $XDG_RUNTIME_DIR; the specification gives it no
// default, so it is "" when unset or relative.
func RuntimeDir(getenv func(string) string) string { return abs(getenv, "XDG_RUNTIME_DIR") }

// ConfigDir returns primalscope's config directory, ConfigHome/primalscope.
func ConfigDir(getenv func(string) string) string { return under(ConfigHome(getenv)) }

// ConfigFile returns the config file, ConfigDir/config.toml.
func ConfigFile(getenv func(string) string) string {
	return join(ConfigDir(getenv), ConfigFileName)
}

// ThemesDir returns the user themes directory, ConfigDir/themes.
func ThemesDir(getenv func(string) string) string {
	return join(ConfigDir(getenv), ThemesDirName)
}

// StateDir returns primalscope's state directory, StateHome/primalscope.
func StateDir(getenv func(string) string) string { return under(StateHome(getenv)) }

// HistoryFile returns the default history database, StateDir/history.db.
func HistoryFile(getenv func(string) string) string {
	return join(StateDir(getenv), HistoryFileName)
}

// CacheDir returns primalscope's cache directory, CacheHome/primalscope.
func CacheDir(getenv func(string) string) string { return under(CacheHome(getenv)) }

// CompletionCacheFile returns the shell completion's cache of the last
// sweep, CacheDir/complete-targets.json.
func CompletionCacheFile(getenv func(string) string) string {
	return join(CacheDir(getenv), CompletionName)
}

func under(d string) string { return join(d, App) }

func join(d, name string) string {
	if d == "" {
		return ""
	}
	return filepath.Join(d, name)
}
