// Command flood measures the TUI as a user meets it on a big, busy
// ecosystem (issue 24's goals): the time from a key to the changed screen,
// and the CPU the TUI process uses, with 2,000 targets listed while one of
// them sends 10,000 JSON-RPC notifications a second to every connection.
//
//	CGO_ENABLED=0 go build -o /tmp/psflood ./cmd/primalscope
//	go run ./bench/flood -bin /tmp/psflood
//
// It serves a socket directory of -targets primals (ipctest.StartCrowd, the
// same crowd as the TUI's load tests, plus "aflood", a peer.Primal that
// sorts first so the TUI listens to it), starts the binary on the default
// path (`BIN --socket-dir DIR`: history on, default theme, under a fresh
// HOME and XDG directories) in a private tmux server at -w×-h, and waits
// until every target is listed and judged (the header counts them live),
// then -settle. Then, first idle and then under the flood:
//
//   - CPU: utime+stime of the TUI process from /proc/PID/stat over -cpu,
//     divided by the wall time (100 % = one core), with no key pressed;
//   - key to screen, -n times: the key (-key, default j: the targets
//     cursor moves one row) is sent with `tmux send-keys` and the pane is
//     read with `capture-pane -p` in a loop until the cursor row names
//     another target. Each sample is paired with the harness's own echo
//     time, taken the same way against `cat` in a second window of the same
//     tmux server (a letter typed, polled until the terminal echoes it);
//     the figures are given raw, and with the echo median subtracted.
//
// The flood is a ticker-paced loop of peer.Server.Notify, bounded by the
// phase; the rate it reached is printed beside the figures. Everything it
// starts (tmux server, primals, temporary directory) is stopped and removed
// before it exits, also on SIGINT/SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ecoPrimals/primalscope/internal/peer"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

type options struct {
	bin      string
	targets  int
	silent   int
	rate     int
	n        int
	cpu      time.Duration
	w, h     int
	key      string
	show     bool
	noIdle   bool
	waitList time.Duration
	settle   time.Duration
	env      string
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "", "primalscope binary to measure (required; build it static: CGO_ENABLED=0 go build -o /tmp/psflood ./cmd/primalscope)")
	flag.IntVar(&o.targets, "targets", 2000, "primals in the socket directory (the flooder included)")
	flag.IntVar(&o.silent, "silent", 0, "of them, primals that accept and never answer")
	flag.IntVar(&o.rate, "rate", 10000, "notifications a second the flooder sends to each connection")
	flag.IntVar(&o.n, "n", 40, "key-to-screen samples per phase")
	flag.DurationVar(&o.cpu, "cpu", 10*time.Second, "CPU measuring window per phase")
	flag.IntVar(&o.w, "w", 120, "terminal width")
	flag.IntVar(&o.h, "h", 35, "terminal height")
	flag.StringVar(&o.key, "key", "j", "key that moves the targets cursor")
	flag.BoolVar(&o.show, "show", false, "print the screen once listed and once under the flood (stderr)")
	flag.BoolVar(&o.noIdle, "no-idle", false, "skip the idle phase")
	flag.DurationVar(&o.waitList, "wait", 90*time.Second, "how long to wait for every target to be listed")
	flag.DurationVar(&o.settle, "settle", 10*time.Second, "pause between every target judged live and the first measurement")
	flag.StringVar(&o.env, "env", "", "extra NAME=value words for the TUI's environment (a diagnostic: not the default path)")
	flag.Parse()
	if o.bin == "" || o.targets < 2 || o.silent >= o.targets || o.n < 1 || o.rate < 1 {
		fmt.Fprintln(os.Stderr, "flood: -bin is required; -targets ≥ 2, -silent < -targets, -n ≥ 1, -rate ≥ 1")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "flood:", err)
		os.Exit(1)
	}
}

// tmux drives a private tmux server.
type tmux struct{ socket string }

func (t tmux) run(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-L", t.socket, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("tmux %s: %w: %s", args[0], err, out)
	}
	return string(out), nil
}

func (t tmux) screen(target string) string {
	out, _ := t.run("capture-pane", "-p", "-t", target)
	return out
}

var (
	listedRe = regexp.MustCompile(`Targets[ ─]*(\d+)`)
	liveRe   = regexp.MustCompile(`(\d+) live · `)
	evRe     = regexp.MustCompile(`(\d+) ev/s`)
	cursorRe = regexp.MustCompile(`›\S ((?:live|mute)\d{4}|aflood)`)
)

func listed(scr string) int {
	if m := listedRe.FindStringSubmatch(scr); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

func live(scr string) int {
	if m := liveRe.FindStringSubmatch(scr); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

// evs is the header's events-a-second figure (-1 when not shown).
func evs(scr string) int {
	if m := evRe.FindStringSubmatch(scr); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return -1
}

func cursorOn(scr string) string {
	if m := cursorRe.FindStringSubmatch(scr); m != nil {
		return m[1]
	}
	return ""
}

func run(ctx context.Context, o options) (err error) {
	bin, err := filepath.Abs(o.bin)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "psfl") // short: socket paths are bounded
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	socks, home, run := filepath.Join(tmp, "s"), filepath.Join(tmp, "h"), filepath.Join(tmp, "r")
	for _, d := range []string{socks, home, run} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	crowd, err := ipctest.StartCrowd(socks, o.targets-1-o.silent, o.silent)
	if err != nil {
		return fmt.Errorf("starting the crowd: %w", err)
	}
	defer crowd.Close()
	flooder, err := peer.StartPrimal(filepath.Join(socks, "aflood.sock"), &peer.Primal{
		Name: "aflood", Version: "1.0.0",
		Groups: []peer.Group{{Type: "telemetry", Methods: []string{"telemetry.tick"}}},
	})
	if err != nil {
		return fmt.Errorf("starting the flooder: %w", err)
	}
	defer flooder.Close()

	tm := tmux{socket: fmt.Sprintf("psflood%d", os.Getpid())}
	defer func() {
		// kill-server leaves the server's socket file behind.
		sock, _ := tm.run("display-message", "-p", "#{socket_path}")
		tm.run("kill-server")
		if sock = strings.TrimSpace(sock); strings.HasSuffix(sock, "/"+tm.socket) {
			os.Remove(sock)
		}
	}()
	pidFile := filepath.Join(tmp, "pid")
	env := fmt.Sprintf("env -i PATH=%s HOME=%s XDG_CONFIG_HOME=%s/config XDG_STATE_HOME=%s/state XDG_CACHE_HOME=%s/cache XDG_DATA_HOME=%s/data XDG_RUNTIME_DIR=%s TMPDIR=%s TERM=xterm-256color COLORTERM=truecolor",
		os.Getenv("PATH"), home, home, home, home, home, run, tmp)
	cmd := fmt.Sprintf("echo $$ > %s; exec %s %s %s --socket-dir %s 2>%s/stderr", pidFile, env, o.env, bin, socks, tmp)
	if _, err := tm.run("new-session", "-d", "-s", "ps", "-x", strconv.Itoa(o.w), "-y", strconv.Itoa(o.h), "sh", "-c", cmd); err != nil {
		return err
	}
	if _, err := tm.run("new-window", "-d", "-t", "ps:9", "cat"); err != nil {
		return err
	}
	start := time.Now()
	var scr string
	for {
		scr = tm.screen("ps:0")
		if listed(scr) >= o.targets && live(scr) >= o.targets-o.silent && cursorOn(scr) != "" {
			break
		}
		if time.Since(start) > o.waitList || ctx.Err() != nil {
			b, _ := os.ReadFile(filepath.Join(tmp, "stderr"))
			return fmt.Errorf("not every target listed after %v (%d):\n%s\nstderr: %s", time.Since(start).Round(time.Millisecond), listed(scr), scr, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if o.env != "" {
		fmt.Printf("NOT the default path: environment adds %s\n", o.env)
	}
	fmt.Printf("binary %s\n%d targets listed, %d live (%d silent served) %v after start; %dx%d\n", bin, listed(scr), live(scr), o.silent, time.Since(start).Round(10*time.Millisecond), o.w, o.h)
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("reading the TUI's pid: %w", err)
	}
	if o.show {
		fmt.Fprintln(os.Stderr, scr)
	}
	sleep(ctx, o.settle) // the first sweep's aftermath (listening, current target) settles

	if !o.noIdle {
		fmt.Printf("idle:  load %s\n", loadavg())
		c, err := cpu(ctx, pid, o.cpu)
		if err != nil {
			return err
		}
		keys, echo, err := samples(ctx, tm, o)
		if err != nil {
			return err
		}
		report("idle", c, keys, echo, pid)
	}

	fctx, fstop := context.WithTimeout(ctx, 10*time.Minute)
	defer fstop()
	sent := make(chan int64, 1)
	fstart := time.Now()
	go func() { sent <- flood(fctx, flooder, o.rate) }()
	sleep(ctx, 2*time.Second)
	// The TUI hears the flooder only while it listens to it (the current
	// target and the first MaxListen of the targets pane): a run where it
	// does not is no measurement of a flood.
	heard := func() error {
		for w := time.Now(); len(flooder.Conns()) == 0; time.Sleep(100 * time.Millisecond) {
			if time.Since(w) > 10*time.Second {
				return errors.New("the TUI is not connected to the flooder (it does not listen to it): no flood reaches it, no figures")
			}
		}
		return nil
	}
	if err := heard(); err != nil {
		fstop()
		<-sent
		fmt.Fprintln(os.Stderr, tm.screen("ps:0"))
		return err
	}
	scr0 := tm.screen("ps:0")
	fmt.Printf("flood: load %s; the flooder has %d connections; the header says %d ev/s\n", loadavg(), len(flooder.Conns()), evs(scr0))
	self0, _ := procCPU(os.Getpid())
	c, err := cpu(ctx, pid, o.cpu)
	if err == nil {
		err = heard()
	}
	if self1, e := procCPU(os.Getpid()); e == nil {
		// The flooder and the 2,000 primals share the machine with the TUI.
		fmt.Printf("flood: the harness itself (primals, flooder) used %.1f %% of one core over the same window\n", float64(self1-self0)/float64(o.cpu)*100)
	}
	if err != nil {
		fstop()
		<-sent
		return err
	}
	fmt.Printf("flood: after the CPU window the header says %d ev/s\n", evs(tm.screen("ps:0")))
	if o.show {
		fmt.Fprintln(os.Stderr, tm.screen("ps:0"))
	}
	keys, echo, err := samples(ctx, tm, o)
	fstop()
	n := <-sent
	if err != nil {
		return err
	}
	wall := time.Since(fstart)
	report("flood", c, keys, echo, pid)
	if len(flooder.Conns()) == 0 {
		return errors.New("the TUI stopped listening to the flooder during the key samples: the key figures above are not under the flood")
	}
	fmt.Printf("flood: %d notifications sent in %v (%.0f/s to each connection)\n", n, wall.Round(time.Second), float64(n)/wall.Seconds())
	return nil
}

// flood sends rate notifications a second through srv until ctx ends, paced
// by a ticker (catching up to the wall clock each tick); it returns how
// many it sent.
func flood(ctx context.Context, srv *peer.Server, rate int) int64 {
	tk := time.NewTicker(time.Millisecond)
	defer tk.Stop()
	start := time.Now()
	var sent int64
	for {
		select {
		case <-ctx.Done():
			return sent
		case now := <-tk.C:
			due := int64(now.Sub(start).Seconds() * float64(rate))
			for ; sent < due && ctx.Err() == nil; sent++ {
				srv.Notify("telemetry.tick", map[string]any{"seq": sent, "source": "aflood", "value": sent % 97})
			}
		}
	}
}

// cpu returns the share of one core pid used over d.
func cpu(ctx context.Context, pid int, d time.Duration) (float64, error) {
	c0, err := procCPU(pid)
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	sleep(ctx, d)
	c1, err := procCPU(pid)
	if err != nil {
		return 0, err
	}
	return float64(c1-c0) / float64(time.Since(t0)) * 100, ctx.Err()
}

// procCPU returns the user+system CPU time of pid from /proc.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the TUI's CPU time: %w", err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100, nil // USER_HZ
}

func rssMB(pid int) float64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			kb, _ := strconv.Atoi(strings.Fields(l)[1])
			return float64(kb) / 1024
		}
	}
	return 0
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

var errNoChange = errors.New("the screen did not change within 5 s")

// keyToScreen sends key to target and reads the pane until changed holds.
func keyToScreen(tm tmux, target, key string, changed func(string) bool) (time.Duration, error) {
	t0 := time.Now()
	if _, err := tm.run("send-keys", "-t", target, key); err != nil {
		return 0, err
	}
	for time.Since(t0) < 5*time.Second {
		if changed(tm.screen(target)) {
			return time.Since(t0), nil
		}
	}
	return 0, fmt.Errorf("%s on %s: %w", key, target, errNoChange)
}

// samples takes o.n key-to-screen times on the TUI, each followed by one
// echo time on cat, with a pause between so the TUI's work for one key
// (the cursor coming to rest makes its target current) does not meet the
// next.
func samples(ctx context.Context, tm tmux, o options) (keys, echo []time.Duration, err error) {
	for i := 0; i < o.n && ctx.Err() == nil; i++ {
		before := cursorOn(tm.screen("ps:0"))
		d, err := keyToScreen(tm, "ps:0", o.key, func(s string) bool {
			c := cursorOn(s)
			return c != "" && c != before
		})
		if err != nil {
			return nil, nil, err
		}
		keys = append(keys, d)
		sleep(ctx, 150*time.Millisecond)
		n := strings.Count(tm.screen("ps:9"), "x")
		e, err := keyToScreen(tm, "ps:9", "x", func(s string) bool { return strings.Count(s, "x") > n })
		if err != nil {
			return nil, nil, err
		}
		echo = append(echo, e)
		if i%50 == 49 {
			tm.run("send-keys", "-t", "ps:9", "C-u") // keep the echo line short
		}
		sleep(ctx, 250*time.Millisecond)
	}
	return keys, echo, ctx.Err()
}

func q(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p*float64(len(s)) + 0.5)
	if i < 1 {
		i = 1
	}
	if i > len(s) {
		i = len(s)
	}
	return s[i-1]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

func report(phase string, cpu float64, keys, echo []time.Duration, pid int) {
	em := q(echo, 0.5)
	net := make([]time.Duration, len(keys))
	for i, k := range keys {
		net[i] = k - em
	}
	fmt.Printf("%s: CPU %.1f %% of one core; RSS %.0f MB; load %s\n", phase, cpu, rssMB(pid), loadavg())
	fmt.Printf("%s: key to screen (n=%d) raw p50 %s p95 %s max %s ms; echo p50 %s p95 %s ms; key minus echo median: p50 %s p95 %s ms\n",
		phase, len(keys), ms(q(keys, 0.5)), ms(q(keys, 0.95)), ms(q(keys, 1)), ms(em), ms(q(echo, 0.95)), ms(q(net, 0.5)), ms(q(net, 0.95)))
	s := slices.Clone(keys)
	slices.Sort(s)
	all := make([]string, len(s))
	for i, d := range s {
		all[i] = ms(d)
	}
	fmt.Printf("%s: every key, sorted (ms): %s\n", phase, strings.Join(all, " "))
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
