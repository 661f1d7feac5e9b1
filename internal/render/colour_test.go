package render

import (
	"bytes"
	"testing"

	"github.com/charmbracelet/colorprofile"
)

func TestDecideColor(t *testing.T) {
	env := func(noColor string) func(string) string {
		return func(k string) string {
			if k == "NO_COLOR" {
				return noColor
			}
			return ""
		}
	}
	for _, tc := range []struct {
		mode    string
		noColor bool
		env     string
		want    ColorChoice
	}{
		{"auto", false, "", ColorAuto},
		{"", false, "", ColorAuto},
		{"auto", false, "1", ColorNever},
		{"auto", false, "anything", ColorNever}, // no-color.org: any non-empty value
		{"", false, "0", ColorNever},
		{"always", false, "", ColorAlways},
		{"always", false, "1", ColorAlways}, // an explicit flag beats NO_COLOR
		{"always", true, "", ColorNever},    // --no-color means never
		{"never", false, "", ColorNever},
		{"auto", true, "", ColorNever},
	} {
		got, err := DecideColor(tc.mode, tc.noColor, env(tc.env))
		if err != nil || got != tc.want {
			t.Errorf("DecideColor(%q, %v, NO_COLOR=%q) = %v, %v; want %v", tc.mode, tc.noColor, tc.env, got, err, tc.want)
		}
	}
	if _, err := DecideColor("sometimes", false, env("")); err == nil {
		t.Error("a bad mode must be an error")
	}
	if _, err := DecideColor("Always", false, env("")); err == nil {
		t.Error("modes are exact words")
	}
}

func TestColorChoiceProfile(t *testing.T) {
	var pipe bytes.Buffer
	environ := []string{"TERM=xterm-256color", "NO_COLOR=1"}
	if p := ColorAlways.Profile(&pipe, environ); p < colorprofile.ANSI256 {
		t.Errorf("always into a pipe with NO_COLOR in the environment: %v", p)
	}
	if p := ColorNever.Profile(&pipe, []string{"TERM=xterm-256color", "CLICOLOR_FORCE=1"}); p != colorprofile.NoTTY {
		t.Errorf("never: %v", p)
	}
	if p := ColorAuto.Profile(&pipe, []string{"TERM=xterm-256color"}); p > colorprofile.Ascii {
		t.Errorf("auto into a pipe: %v", p)
	}
}
