package ipc

import (
	"errors"
	"reflect"
	"testing"
)

func TestParseEndpoint(t *testing.T) {
	cases := []struct {
		in   string
		want Endpoint
	}{
		{"/run/user/1000/biomeos/beardog.sock", Endpoint{Transport: Unix, Path: "/run/user/1000/biomeos/beardog.sock"}},
		{"./beardog.sock", Endpoint{Transport: Unix, Path: "./beardog.sock"}},
		{"beardog.sock", Endpoint{Transport: Unix, Path: "beardog.sock"}},
		{"unix:///tmp/biomeos/x.sock", Endpoint{Transport: Unix, Path: "/tmp/biomeos/x.sock"}},
		{"unix:/tmp/x.sock", Endpoint{Transport: Unix, Path: "/tmp/x.sock"}},
		{"tcp://127.0.0.1:9200", Endpoint{Transport: TCP, Address: "127.0.0.1:9200"}},
		{"localhost:9200", Endpoint{Transport: TCP, Address: "localhost:9200"}},
		{"[::1]:9200", Endpoint{Transport: TCP, Address: "[::1]:9200"}},
		{":9200", Endpoint{Transport: TCP, Address: "localhost:9200"}},
		{"@beardog", Endpoint{Transport: Abstract, Path: "beardog"}},
		{"unix://@beardog", Endpoint{Transport: Abstract, Path: "beardog"}},
		{"ws://127.0.0.1:8080", Endpoint{Transport: WS, URL: "ws://127.0.0.1:8080/rpc"}},
		{"wss://holon.example:443/api", Endpoint{Transport: WSS, URL: "wss://holon.example:443/api"}},
		{`stdio:"stdiobus --config 'my pools.json'"`, Endpoint{Transport: Stdio, Argv: []string{"stdiobus", "--config", "my pools.json"}}},
		{`stdio:worker --x "a b" c\ d`, Endpoint{Transport: Stdio, Argv: []string{"worker", "--x", "a b", "c d"}}},
	}
	for _, c := range cases {
		got, err := ParseEndpoint(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: got %+v want %+v", c.in, got, c.want)
		}
		// String renders a form that parses back to the same endpoint.
		back, err := ParseEndpoint(got.String())
		if err != nil || !reflect.DeepEqual(back, got) {
			t.Errorf("%q: round trip through %q gave %+v, %v", c.in, got.String(), back, err)
		}
	}
}

func TestParseEndpointNames(t *testing.T) {
	for _, s := range []string{"beardog", "ai", "neural-api-westgate-tower-155f", "squirrel_2"} {
		if _, err := ParseEndpoint(s); !errors.Is(err, ErrNotAddress) {
			t.Errorf("%q: want ErrNotAddress, got %v", s, err)
		}
	}
}

func TestParseEndpointErrors(t *testing.T) {
	for _, s := range []string{"", "   ", "http://x:1", "tcp://host", "tcp://host:http", "host:0", "host:70000",
		"@", "unix://", "stdio:", `stdio:"unterminated`, "ws://", "bad name!", "a\x00b", ".", "..", " .. "} {
		if _, err := ParseEndpoint(s); err == nil || errors.Is(err, ErrNotAddress) {
			t.Errorf("%q: want a clear error, got %v", s, err)
		}
	}
}

// Port 0 is an address to listen on (the system picks the port), never one
// to dial.
func TestParseListenEndpointTakesPortZero(t *testing.T) {
	for _, s := range []string{"tcp://127.0.0.1:0", "127.0.0.1:0"} {
		if _, err := ParseEndpoint(s); err == nil {
			t.Errorf("ParseEndpoint(%q) should refuse port 0", s)
		}
		ep, err := ParseListenEndpoint(s)
		if err != nil || ep.Transport != TCP || ep.Address != "127.0.0.1:0" {
			t.Errorf("ParseListenEndpoint(%q) = %+v, %v", s, ep, err)
		}
	}
	if _, err := ParseListenEndpoint("tcp://127.0.0.1:65536"); err == nil {
		t.Error("ParseListenEndpoint should refuse port 65536")
	}
}
