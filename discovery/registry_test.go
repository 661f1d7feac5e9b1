package discovery

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

func songbirdFixture(t *testing.T, sb *ipctest.Songbird) (dir string, srv *ipctest.Server) {
	dir = tempDir(t)
	srv = serve(t, dir, "songbird.sock", sb.Config())
	return dir, srv
}

func foundsByName(fs []Found) map[string]Found {
	m := map[string]Found{}
	for _, f := range fs {
		m[f.Name] = f
	}
	return m
}

func TestSongbirdSourceShapes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		legacy  bool
		virtual bool
	}{{"current", false, false}, {"legacy", true, false}, {"virtual-only+resolve", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			sb := ipctest.NewSongbird()
			sb.Legacy, sb.VirtualOnly = tc.legacy, tc.virtual
			sb.Register(ipctest.Service{PrimalID: "beardog", Capabilities: []string{"crypto"}, Endpoint: "unix:///run/x/beardog.sock"})
			sb.Register(ipctest.Service{PrimalID: "tower", Capabilities: []string{"compute"}, Endpoint: "tcp://127.0.0.1:9301"})
			if !tc.legacy {
				sb.Register(ipctest.Service{PrimalID: "faraway", Relay: true})
			}
			sb.SetPeers(ipctest.SongbirdPeer{NodeID: "node-b", Address: "127.0.0.1", TCPPort: 9200})
			_, srv := songbirdFixture(t, sb)
			src := &SongbirdSource{Registry: Registry{Endpoint: srv.Endpoint()}, Federation: true}
			fs, err := src.Discover(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			got := foundsByName(fs)
			if f := got["beardog"]; f.Endpoint.Path != "/run/x/beardog.sock" || f.Source != SrcSongbird || !reflect.DeepEqual(f.Capabilities, []string{"crypto"}) {
				t.Errorf("beardog: %+v", f)
			}
			if f := got["tower"]; f.Endpoint.Transport != ipc.TCP || f.Endpoint.Address != "127.0.0.1:9301" {
				t.Errorf("tower: %+v", f)
			}
			if !tc.legacy {
				if f := got["faraway"]; !f.NoProbe || f.Endpoint.Transport != "" || !strings.Contains(f.Note, "relay") {
					t.Errorf("relay: %+v", f)
				}
			}
			if f := got["songbird@node-b"]; f.Kind != KindRemote || f.Endpoint.Address != "127.0.0.1:9200" {
				t.Errorf("peer: %+v", f)
			}
		})
	}
}

func TestSongbirdGarbage(t *testing.T) {
	sb := ipctest.NewSongbird()
	sb.Register(ipctest.Service{PrimalID: "beardog", Endpoint: "/run/x/b.sock"})
	sb.Garbage = true
	_, srv := songbirdFixture(t, sb)
	fs, err := (&SongbirdSource{Registry: Registry{Endpoint: srv.Endpoint()}}).Discover(ctxT(t))
	if err == nil {
		t.Error("garbage answer not reported")
	}
	if len(fs) != 0 {
		t.Errorf("found from garbage: %+v", fs)
	}
	// A registry that answers with bytes that are not JSON at all.
	dir := tempDir(t)
	g := serve(t, dir, "songbird.sock", ipctest.Config{Behavior: ipctest.Behavior{Garbage: true}})
	fs, err = (&SongbirdSource{Registry: Registry{Endpoint: g.Endpoint(), Timeout: 200e6}}).Discover(ctxT(t))
	if err == nil || len(fs) != 0 {
		t.Errorf("non-JSON registry: %v %+v", err, fs)
	}
}

func TestRegistryClient(t *testing.T) {
	sb := ipctest.NewSongbird()
	sb.Register(ipctest.Service{PrimalID: "squirrel", Capabilities: []string{"ai"}, Endpoint: "unix:///run/x/squirrel.sock"})
	_, srv := songbirdFixture(t, sb)
	r := &Registry{Endpoint: srv.Endpoint()}
	ctx := ctxT(t)
	ps, err := r.Discover(ctx, "ai")
	if err != nil || len(ps) != 1 || ps[0].PrimalID != "squirrel" || ps[0].Endpoint.Path != "/run/x/squirrel.sock" {
		t.Fatalf("discover: %+v %v", ps, err)
	}
	res, err := r.Resolve(ctx, "squirrel")
	if err != nil || res.Endpoint.Path != "/run/x/squirrel.sock" {
		t.Fatalf("resolve: %+v %v", res, err)
	}
	if _, err := r.Resolve(ctx, "nobody"); err == nil {
		t.Error("resolve of an unknown primal succeeded")
	}
	w, err := r.Watch(ctx, 0)
	if err != nil || w.Revision != 1 || len(w.Events) != 1 || w.Events[0].Primal != "squirrel" || w.Events[0].Kind != "registered" {
		t.Fatalf("watch: %+v %v", w, err)
	}
	sb.Register(ipctest.Service{PrimalID: "nestgate", Endpoint: "/run/x/n.sock"})
	w, err = r.Watch(ctx, 1)
	if err != nil || w.Revision != 2 || len(w.Events) != 1 || w.Events[0].Primal != "nestgate" {
		t.Fatalf("watch since 1: %+v %v", w, err)
	}
}

func TestParseRegistryShapes(t *testing.T) {
	regs, err := ParseIPCList(json.RawMessage(`{"services":[
		{"primal_id":"a","virtual_endpoint":"songbird://a","capabilities":["x"]},
		{"name":"b","endpoint":"/run/b.sock","capabilities":["y"],"version":"1.2","available":false},
		{"primal_id":"c","endpoint":{"transport":"tcp","host":"10.0.0.2","port":9300}},
		{"primal_id":"d","native_endpoint":"stdio:\"rm -rf /\""},
		"junk", {}
	]}`))
	if err == nil || !strings.Contains(err.Error(), "2 entries") {
		t.Errorf("bad entries not counted: %v", err)
	}
	if len(regs) != 4 {
		t.Fatalf("%+v", regs)
	}
	if regs[0].PrimalID != "a" || regs[0].Endpoint.Transport != "" {
		t.Errorf("%+v", regs[0])
	}
	if !regs[1].Legacy || regs[1].Available == nil || *regs[1].Available || regs[1].Endpoint.Path != "/run/b.sock" {
		t.Errorf("%+v", regs[1])
	}
	if regs[2].Endpoint.Address != "10.0.0.2:9300" {
		t.Errorf("%+v", regs[2])
	}
	if regs[3].Endpoint.Transport != "" {
		t.Errorf("a registry made primalscope accept a command: %+v", regs[3])
	}
	r, err := ParseResolve(json.RawMessage(`{"virtual_endpoint":"x","native_endpoint":"unix:///run/s.sock","endpoint":{"transport":"uds","path":"/run/s.sock"},"capabilities":[],"relay":false}`))
	if err != nil || r.Endpoint.Path != "/run/s.sock" {
		t.Errorf("%+v %v", r, err)
	}
	r, err = ParseResolve(json.RawMessage(`{"endpoint":{"transport":"mesh_relay","peer_id":"p"}}`))
	if err != nil || !r.Relay {
		t.Errorf("relay: %+v %v", r, err)
	}
	for _, bad := range []string{`null`, `"x"`, `[]`, `{"revision":"x"}`, `{`} {
		if _, err := ParseWatch(json.RawMessage(bad)); err == nil {
			t.Errorf("ParseWatch(%s) accepted", bad)
		}
	}
	peers, err := ParsePeers(json.RawMessage(`{"peers":[{"node_id":"n","address":"10.0.0.3","tcp_port":9200},{"node_id":"noaddr"},{"address":"h","tcp_port":99999}]}`))
	if err != nil || len(peers) != 2 || peers[0].TCPPort != 9200 || peers[1].TCPPort != 0 {
		t.Errorf("%+v %v", peers, err)
	}
}

func TestNeuralSource(t *testing.T) {
	dir := tempDir(t)
	n := ipctest.NewNeural(
		ipctest.NeuralEntry{Name: "beardog", State: "running", Socket: filepath.Join(dir, "beardog-f.sock"), PID: 10},
		ipctest.NeuralEntry{Name: "nestgate", State: "running", Socket: filepath.Join(dir, "nestgate-f.sock"), Hidden: true},
		ipctest.NeuralEntry{Name: "toadstool", State: "failed"},
	)
	srv := serve(t, dir, "neural-api.sock", n.Config()) // a cleartext fake: not family-scoped by name
	fs, err := (&NeuralSource{Endpoint: srv.Endpoint()}).Discover(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	got := foundsByName(fs)
	if f := got["beardog"]; f.Endpoint.Path != filepath.Join(dir, "beardog-f.sock") || f.Source != SrcNeural {
		t.Errorf("%+v", f)
	}
	if f := got["nestgate"]; f.Endpoint.Path != filepath.Join(dir, "nestgate-f.sock") {
		t.Errorf("lifecycle.get not used: %+v", f)
	}
	if f := got["toadstool"]; !f.NoProbe || !strings.Contains(f.Note, "failed") {
		t.Errorf("%+v", f)
	}
	var ns []string
	for n := range got {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	if len(ns) != 3 {
		t.Errorf("%v", ns)
	}
}

func TestNeuralSourceBTSP(t *testing.T) {
	dir := tempDir(t)
	// A name that does not say it is family-scoped: the peer's demand is reported.
	srv := serve(t, dir, "neural-api.sock", ipctest.Config{Behavior: ipctest.Behavior{
		OnConnect: []byte(`{"jsonrpc":"2.0","error":{"code":-32000,"message":"BTSP handshake required (enforced)"},"id":null}` + "\n")}})
	_, err := (&NeuralSource{Endpoint: srv.Endpoint(), Timeout: 500e6}).Discover(ctxT(t))
	if err == nil || !strings.Contains(err.Error(), "BTSP") {
		t.Errorf("BTSP demand not reported: %v", err)
	}
}
