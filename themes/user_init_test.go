package themes

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// TestSnakeMatchesRegexp pins snake to the rule it replaced: an underscore
// between a lower-case letter and an upper-case one, then lower case.
func TestSnakeMatchesRegexp(t *testing.T) {
	re := regexp.MustCompile(`([a-z])([A-Z])`)
	want := func(s string) string { return strings.ToLower(re.ReplaceAllString(s, "${1}_${2}")) }
	cases := []string{"", "A", "a", "FocusBorder", "URLText", "aBC", "aBcD", "Status2Ok", "x_Y", "éA", "abcDEFgh", "ÄbC"}
	ty := reflect.TypeOf(UIColors{})
	for i := 0; i < ty.NumField(); i++ {
		cases = append(cases, ty.Field(i).Name)
	}
	for _, c := range cases {
		if got := snake(c); got != want(c) {
			t.Errorf("snake(%q) = %q, want %q", c, got, want(c))
		}
	}
	if n := len(uiFields()); n != ty.NumField() {
		t.Errorf("uiFields has %d names for %d fields", n, ty.NumField())
	}
}

func TestParseColorHex(t *testing.T) {
	for s, ok := range map[string]bool{"#fff": true, "#A0b1C2": true, "#ffff": false, "fff": false, "#ggg": false, "12": true, "256": false} {
		if _, err := ParseColor(s); (err == nil) != ok {
			t.Errorf("ParseColor(%q): err %v, want ok=%v", s, err, ok)
		}
	}
}
