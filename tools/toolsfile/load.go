package toolsfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/BurntSushi/toml"

	"github.com/wrun-dev/wrun/internal/envlist"
	"github.com/wrun-dev/wrun/tools"
)

// maxSize bounds a labels file: it is a short list of names.
const maxSize = 1 << 20

// RepoFile is where, below the workspace root, a repository's file is.
const RepoFile = ".wrun/tools.toml"

// UserPath returns the user's labels file: $XDG_CONFIG_HOME/wrun/tools.toml
// when XDG_CONFIG_HOME is an absolute path, else $HOME/.config/wrun/tools.toml.
// It returns "" when neither variable helps.
func UserPath(env []string) string {
	if x, ok := envlist.Lookup(env, "XDG_CONFIG_HOME"); ok && filepath.IsAbs(x) {
		return filepath.Join(x, "wrun", "tools.toml")
	}
	if h, ok := envlist.Lookup(env, "HOME"); ok && filepath.IsAbs(h) {
		return filepath.Join(h, ".config", "wrun", "tools.toml")
	}
	return ""
}

// Load reads the user's file (UserPath(env)) and the repository's file
// below workdir ("" for none), either of which may be absent, and returns
// the labels with the files it read.
func Load(env []string, workdir string) (tools.Labels, []string, error) {
	var l tools.Labels
	var read []string
	if p := UserPath(env); p != "" {
		data, err := readFile(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return tools.Labels{}, nil, err
		default:
			if l, err = ParseUser(p, data); err != nil {
				return tools.Labels{}, nil, err
			}
			read = append(read, p)
		}
	}
	if workdir != "" {
		p := filepath.Join(workdir, RepoFile)
		data, err := readFile(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return tools.Labels{}, nil, err
		default:
			if l.NarrowTools, l.NarrowServers, err = ParseRepo(p, data); err != nil {
				return tools.Labels{}, nil, err
			}
			read = append(read, p)
		}
	}
	if err := l.Check(); err != nil {
		return tools.Labels{}, nil, fmt.Errorf("tool labels (%s): %w", strings.Join(read, ", "), err)
	}
	return l, read, nil
}

// readFile reads a regular file of at most maxSize bytes without
// following a symbolic link in its last component and without blocking
// on a FIFO (a repository is untrusted input).
func readFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("tool labels: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("tool labels: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("tool labels: %s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSize+1))
	if err != nil {
		return nil, fmt.Errorf("tool labels: %s: %w", path, err)
	}
	if len(data) > maxSize {
		return nil, fmt.Errorf("tool labels: %s is larger than %d bytes", path, maxSize)
	}
	return data, nil
}

// file is both files' shape: [servers] and [tools], each a table of
// names to a family (the user's) or to families (a repository's).
type file struct {
	Servers map[string]toml.Primitive `toml:"servers"`
	Tools   map[string]toml.Primitive `toml:"tools"`
}

func decode(path string, data []byte) (file, toml.MetaData, error) {
	var f file
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&f)
	if err != nil {
		return file{}, md, fmt.Errorf("%s: %w", path, err)
	}
	if un := md.Undecoded(); len(un) > 0 {
		// Primitives count as undecoded until decoded: only report
		// keys outside the two tables.
		for _, k := range un {
			if len(k) == 0 || (k[0] != "servers" && k[0] != "tools") {
				return file{}, md, fmt.Errorf("%s: unknown key %q; a tools file has the tables [servers] and [tools]", path, k.String())
			}
		}
	}
	return f, md, nil
}

// ParseUser reads the user's file: each name in [servers] and [tools] is
// given one family.
func ParseUser(path string, data []byte) (tools.Labels, error) {
	f, md, err := decode(path, data)
	if err != nil {
		return tools.Labels{}, err
	}
	l := tools.Labels{Tools: map[string]tools.Family{}, Servers: map[string]tools.Family{}}
	for _, t := range []struct {
		table string
		in    map[string]toml.Primitive
		out   map[string]tools.Family
	}{{"servers", f.Servers, l.Servers}, {"tools", f.Tools, l.Tools}} {
		for name, prim := range t.in {
			var s string
			if err := md.PrimitiveDecode(prim, &s); err != nil {
				return tools.Labels{}, fmt.Errorf("%s: %s.%q: want one family as a string (%s)", path, t.table, name, strings.Join(tools.FamilyNames(), ", "))
			}
			fam, err := tools.ParseFamily(s)
			if err != nil {
				return tools.Labels{}, fmt.Errorf("%s: %s.%q: %w", path, t.table, name, err)
			}
			t.out[name] = fam
		}
	}
	return l, nil
}

// ParseRepo reads a repository's file: each name in [servers] and
// [tools] is given a family or a list of families that its tools need in
// addition to their own.
func ParseRepo(path string, data []byte) (narrowTools, narrowServers map[string][]tools.Family, err error) {
	f, md, err := decode(path, data)
	if err != nil {
		return nil, nil, err
	}
	narrowTools, narrowServers = map[string][]tools.Family{}, map[string][]tools.Family{}
	for _, t := range []struct {
		table string
		in    map[string]toml.Primitive
		out   map[string][]tools.Family
	}{{"servers", f.Servers, narrowServers}, {"tools", f.Tools, narrowTools}} {
		for name, prim := range t.in {
			var list []string
			var one string
			if err := md.PrimitiveDecode(prim, &one); err == nil {
				list = []string{one}
			} else if err := md.PrimitiveDecode(prim, &list); err != nil {
				return nil, nil, fmt.Errorf("%s: %s.%q: want a family or a list of families", path, t.table, name)
			}
			for _, s := range list {
				fam, err := tools.ParseFamily(s)
				if err != nil {
					return nil, nil, fmt.Errorf("%s: %s.%q: %w", path, t.table, name, err)
				}
				if !slices.Contains(t.out[name], fam) {
					t.out[name] = append(t.out[name], fam)
				}
			}
		}
	}
	return narrowTools, narrowServers, nil
}
