package config

import (
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  string
	}{
		{"2GiB", 2 << 30, ""}, {"500MB", 500e6, ""}, {"1073741824", 1 << 30, ""}, {" 64 MiB ", 64 << 20, ""},
		{"1k", 1000, ""}, {"3TiB", 3 << 40, ""}, {"0", 0, ""}, {"7B", 7, ""},
		{"", 0, "want a size"}, {"GiB", 0, "want a size"}, {"2 gigs", 0, "unknown unit"}, {"-1", 0, "want a size"},
		{"99999999999TiB", 0, "too large"}, {"1.5GiB", 0, "unknown unit"},
	}
	for _, tc := range tests {
		got, err := ParseSize(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseSize(%q) = %d, %v; want an error %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

// TestCacheMaxSize: cache.max_size in the user's config, as a size or a
// number of bytes, at least MinCacheMax; a repository may not set it.
func TestCacheMaxSize(t *testing.T) {
	e, err := Merge(Builtin("/s"), nil, nil)
	if err != nil || e.CacheMax.V != DefaultCacheMax || e.CacheMax.Source != SourceBuiltin || DefaultCacheMax != 2<<30 {
		t.Fatalf("built-in: %+v, %v", e.CacheMax, err)
	}
	for text, want := range map[string]int64{"[cache]\nmax_size = \"512MiB\"\n": 512 << 20, "[cache]\nmax_size = 104857600\n": 100 << 20} {
		e, err := Merge(Builtin("/s"), mustFile(t, "/u/config.toml", text), nil)
		if err != nil || e.CacheMax.V != want || e.CacheMax.Source != "user config /u/config.toml" {
			t.Errorf("%q: %+v, %v", text, e.CacheMax, err)
		}
	}
	for text, msg := range map[string]string{
		"[cache]\nmax_size = \"1KiB\"\n": "/u/config.toml:2: cache.max_size: 1024 bytes: want at least 1MiB",
		"[cache]\nmax_size = \"lots\"\n": "want a size",
		"[cache]\nmax_size = true\n":     "want a size",
		"[cache]\nmax_sise = \"1GiB\"\n": "unknown setting; known: cache.max_size",
	} {
		if _, err := Parse("/u/config.toml", []byte(text)); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: %v, want %q", text, err, msg)
		}
	}
	repo := mustFile(t, "/r/.wrun.toml", "[cache]\nmax_size = \"100GiB\"\n")
	if _, err := Merge(Builtin("/s"), nil, repo); err == nil || !strings.Contains(err.Error(), "cache.max_size: a repository's .wrun.toml may not set this") {
		t.Errorf("a repository's cache.max_size: %v", err)
	}
}
