package verify

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGoScope(t *testing.T) {
	top := tree(t, map[string]string{"mod/go.mod": "module x\n", "mod/sub/x.go": "package sub\n", "plain/README": "", "state/gocache/" + GoCacheSeeded: "",
		"home/.config/go/env": "GOCACHE=/from/envfile\n"})
	tests := []struct {
		name      string
		workdir   string
		env       map[string]string
		in        Input
		wantCache bool
		wantProg  string // substring of GOCACHEPROG; "" means unset
		wantRead  string // the user's cache the program reads
		note      string
	}{
		{name: "no module", workdir: "plain"},
		{name: "module below", workdir: "mod/sub", wantCache: true, wantProg: "__gocacheprog", wantRead: "/u/.cache/go-build"},
		{name: "GOCACHE from the environment", workdir: "mod", env: map[string]string{"GOCACHE": "/c/go"}, wantCache: true, wantProg: "--read /c/go", wantRead: "/c/go"},
		{name: "XDG_CACHE_HOME", workdir: "mod", env: map[string]string{"XDG_CACHE_HOME": "/x"}, wantCache: true, wantRead: "/x/go-build", wantProg: "--read /x/go-build"},
		{name: "GOCACHE from the go env file", workdir: "mod", in: Input{Home: "$T/home"}, wantCache: true, wantRead: "/from/envfile", wantProg: "/from/envfile"},
		{name: "user cache off", workdir: "mod", env: map[string]string{"GOCACHE": "off"}, wantCache: true, note: "starts empty"},
		{name: "no wrun path", workdir: "mod", in: Input{Self: "-"}, wantCache: true, note: "starts empty", wantRead: "/u/.cache/go-build"},
		{name: "shared caches (shell=full)", workdir: "mod", in: Input{SharedCaches: true}},
		{name: "a seeded private cache is used directly", workdir: "mod", in: Input{StateDir: "$T/state"}, wantCache: true, wantRead: "/u/.cache/go-build"},
		{name: "paths with spaces are quoted", workdir: "mod", in: Input{Self: "/opt/my tools/wrun"}, wantCache: true, wantProg: "'/opt/my tools/wrun' __gocacheprog", wantRead: "/u/.cache/go-build"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			if in.Home == "" {
				in.Home = "/u"
			}
			in.Home = strings.ReplaceAll(in.Home, "$T", top)
			switch in.Self {
			case "":
				in.Self = "/usr/bin/wrun"
			case "-":
				in.Self = ""
			}
			in.Workdir = filepath.Join(top, tc.workdir)
			in.Getenv = envFunc(tc.env)
			if in.StateDir == "" {
				in.StateDir = "/state/ws/1"
			}
			in.StateDir = strings.ReplaceAll(in.StateDir, "$T", top)
			in.TempDir = "/tmp/wrun-1"
			var s Scope
			goScope(in, &s)
			cache, hasCache := envValue(s, "GOCACHE")
			if hasCache != tc.wantCache || hasCache && cache != filepath.Join(in.StateDir, "gocache") {
				t.Fatalf("GOCACHE=%q (set %v), want private cache %v", cache, hasCache, tc.wantCache)
			}
			if hasCache && (len(s.Writable) != 1 || s.Writable[0].Path != cache || !s.Writable[0].Create) {
				t.Errorf("writable %+v, want only the private cache", s.Writable)
			}
			prog, hasProg := envValue(s, "GOCACHEPROG")
			if hasProg != (tc.wantProg != "") || !strings.Contains(prog, tc.wantProg) {
				t.Errorf("GOCACHEPROG=%q, want it to contain %q", prog, tc.wantProg)
			}
			if tc.wantRead != "" {
				found := false
				for _, r := range s.ReadOnly {
					found = found || r.Path == tc.wantRead
				}
				if !found {
					t.Errorf("the user's GOCACHE %s is not listed as kept read-only: %+v", tc.wantRead, s.ReadOnly)
				}
			}
			if hasCache {
				if v, _ := envValue(s, "GOTMPDIR"); v != "/tmp/wrun-1" {
					t.Errorf("GOTMPDIR=%q", v)
				}
			}
			if tc.note != "" && !strings.Contains(strings.Join(s.Notes, "\n"), tc.note) {
				t.Errorf("notes %q lack %q", s.Notes, tc.note)
			}
		})
	}
}

func TestQuoteArgs(t *testing.T) {
	tests := []struct {
		args []string
		want string
		ok   bool
	}{
		{[]string{"/bin/wrun", "x"}, "/bin/wrun x", true},
		{[]string{"/a b/wrun", "x"}, "'/a b/wrun' x", true},
		{[]string{"/it's", "x"}, `"/it's" x`, true},
		{[]string{`/a'b"c`}, "", false},
		{[]string{""}, "", false},
	}
	for _, tc := range tests {
		got, ok := quoteArgs(tc.args)
		if got != tc.want || ok != tc.ok {
			t.Errorf("quoteArgs(%q) = %q, %v; want %q, %v", tc.args, got, ok, tc.want, tc.ok)
		}
	}
}

func TestGoModCache(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
	}{
		{nil, "/u/go/pkg/mod"},
		{map[string]string{"GOPATH": "/g1:/g2"}, "/g1/pkg/mod"},
		{map[string]string{"GOMODCACHE": "/m"}, "/m"},
	}
	for _, tc := range tests {
		if got := goModCache(Input{Home: "/u", Getenv: envFunc(tc.env)}); got != tc.want {
			t.Errorf("goModCache(%v) = %q, want %q", tc.env, got, tc.want)
		}
	}
}

// cacheClient drives ServeGoCache the way the go command does.
type cacheClient struct {
	t   *testing.T
	in  io.WriteCloser
	out *json.Decoder
	id  int64
}

func startCache(t *testing.T, private string, readOnly ...string) (*cacheClient, chan error) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := ServeGoCache(inR, outW, private, readOnly)
		outW.Close()
		done <- err
	}()
	c := &cacheClient{t: t, in: inW, out: json.NewDecoder(bufio.NewReader(outR))}
	var hello cacheResponse
	if err := c.out.Decode(&hello); err != nil || strings.Join(hello.KnownCommands, ",") != "get,put,close" {
		t.Fatalf("hello: %+v, %v", hello, err)
	}
	return c, done
}

func (c *cacheClient) do(req cacheRequest, body []byte) cacheResponse {
	c.t.Helper()
	c.id++
	req.ID = c.id
	b, _ := json.Marshal(req)
	msg := string(b) + "\n"
	if len(body) > 0 {
		msg += `"` + base64.StdEncoding.EncodeToString(body) + "\"\n"
	}
	if _, err := io.WriteString(c.in, msg); err != nil {
		c.t.Fatal(err)
	}
	var res cacheResponse
	if err := c.out.Decode(&res); err != nil {
		c.t.Fatal(err)
	}
	if res.ID != req.ID {
		c.t.Fatalf("response ID %d for request %d", res.ID, req.ID)
	}
	return res
}

func id32(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}

func TestServeGoCache(t *testing.T) {
	private := t.TempDir()
	user := t.TempDir()
	// An entry in the user's cache, written the way the go command does.
	userBody := []byte("compiled std package")
	userOut := id32(string(userBody))
	if err := os.MkdirAll(filepath.Dir(cacheFile(user, userOut, "d")), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(cacheFile(user, userOut, "d"), userBody, 0o644)
	os.MkdirAll(filepath.Dir(cacheFile(user, id32("std"), "a")), 0o755)
	os.WriteFile(cacheFile(user, id32("std"), "a"), fmt.Appendf(nil, "v1 %x %x %20d %20d\n", id32("std"), userOut, len(userBody), 12345), 0o644)
	before := listTree(t, user)

	c, done := startCache(t, private, user)
	if res := c.do(cacheRequest{Command: "get", ActionID: id32("nothing")}, nil); !res.Miss {
		t.Errorf("get of an unknown action: %+v", res)
	}
	res := c.do(cacheRequest{Command: "get", ActionID: id32("std")}, nil)
	if res.Miss || res.DiskPath != cacheFile(private, userOut, "d") || res.Size != int64(len(userBody)) || string(res.OutputID) != string(userOut) {
		t.Errorf("get of an entry in the user's cache: %+v", res)
	}
	if got, _ := os.ReadFile(res.DiskPath); string(got) != string(userBody) {
		t.Errorf("the entry copied from the user's cache holds %q", got)
	}
	if _, _, _, ok := readCacheEntry(private, id32("std")); !ok {
		t.Errorf("the entry from the user's cache was not copied into the private one")
	}
	body := []byte("new object file")
	res = c.do(cacheRequest{Command: "put", ActionID: id32("mine"), OutputID: id32(string(body)), BodySize: int64(len(body))}, body)
	if res.Err != "" || !within(res.DiskPath, private) {
		t.Fatalf("put: %+v", res)
	}
	if got, _ := os.ReadFile(res.DiskPath); string(got) != string(body) {
		t.Errorf("put wrote %q", got)
	}
	res = c.do(cacheRequest{Command: "get", ActionID: id32("mine")}, nil)
	if res.Miss || !within(res.DiskPath, private) {
		t.Errorf("get after put: %+v", res)
	}
	res = c.do(cacheRequest{Command: "put", ActionID: id32("bad"), OutputID: id32("other"), BodySize: 3}, []byte("abc"))
	if res.Err == "" {
		t.Errorf("a put whose output ID is not the body's hash was accepted")
	}
	res = c.do(cacheRequest{Command: "put", ActionID: id32("empty"), OutputID: id32("")}, nil)
	if res.Err != "" {
		t.Errorf("put of an empty body: %+v", res)
	}
	if res := c.do(cacheRequest{Command: "get", ActionID: id32("empty")}, nil); res.Miss || res.Size != 0 {
		t.Errorf("get of an empty body: %+v", res)
	}
	if res := c.do(cacheRequest{Command: "frobnicate"}, nil); res.Err == "" {
		t.Errorf("unknown command: %+v", res)
	}
	if fileExists(filepath.Join(private, GoCacheSeeded)) {
		t.Errorf("seeded before the go command closed the cache")
	}
	c.do(cacheRequest{Command: "close"}, nil)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !fileExists(filepath.Join(private, GoCacheSeeded)) {
		t.Errorf("not marked seeded after close")
	}
	if after := listTree(t, user); after != before {
		t.Errorf("the read-only cache changed:\nbefore %s\nafter  %s", before, after)
	}
	// A second session finds the entry in the private cache.
	c, done = startCache(t, private)
	if res := c.do(cacheRequest{Command: "get", ActionID: id32("mine")}, nil); res.Miss {
		t.Errorf("the private cache did not persist")
	}
	c.in.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestReadCacheEntryRejectsMalformed(t *testing.T) {
	dir := t.TempDir()
	a := id32("a")
	os.MkdirAll(filepath.Dir(cacheFile(dir, a, "a")), 0o755)
	for _, content := range []string{
		"",
		"v1 short\n",
		fmt.Sprintf("v1 %x %x %20d %20d\n", id32("other"), id32("o"), 1, 1),
		fmt.Sprintf("v2 %x %x %20d %20d\n", a, id32("o"), 1, 1),
		fmt.Sprintf("v1 %x %x %20d %20d\n", a, id32("o"), -1, 1),
	} {
		os.WriteFile(cacheFile(dir, a, "a"), []byte(content), 0o644)
		if _, _, _, ok := readCacheEntry(dir, a); ok {
			t.Errorf("accepted %q", content)
		}
	}
}

// listTree lists the files below dir with their sizes.
func listTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			fmt.Fprintf(&b, "%s:%d:%v ", strings.TrimPrefix(p, dir), fi.Size(), fi.ModTime().UnixNano())
		}
		return nil
	})
	return b.String()
}
