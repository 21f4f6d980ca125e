package config

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
)

// File is the shape of a config file, user's or repository's.
type File struct {
	Defaults Defaults            `toml:"defaults"`
	Roles    map[string]RoleDef  `toml:"roles"`
	Models   map[string]ModelDef `toml:"models"`
	Cache    CacheDef            `toml:"cache"`

	// Path is the file it was read from; lines maps each key it set
	// ("defaults.grant", "roles.scout.model") to its line.
	Path  string         `toml:"-"`
	lines map[string]int `toml:"-"`
}

// Defaults are the settings of every run. A nil pointer or slice is not
// set by the file.
type Defaults struct {
	// Grant is the default grant spec; Ceiling bounds every grant and
	// approval.
	Grant   *string `toml:"grant"`
	Ceiling *string `toml:"ceiling"`
	// Approver is the --approver command; ApproverTimeout its time to
	// answer ("30s").
	Approver        *string `toml:"approver"`
	ApproverTimeout *string `toml:"approver_timeout"`
	// KeepEnv names variables passed through; AllowRead extra readable
	// paths; Hide extra hidden paths.
	KeepEnv   []string `toml:"keep_env"`
	AllowRead []string `toml:"allow_read"`
	Hide      []string `toml:"hide"`
	// Tools are tool catalogue labels (shown, carried in receipts; the
	// grant's tools field is what restricts).
	Tools []string `toml:"tools"`
	// ConductorDir is the directory the conductor role writes without
	// asking.
	ConductorDir *string `toml:"conductor_dir"`
	// ReceiptsMaxBytes is the size at which the receipts file is rotated.
	ReceiptsMaxBytes *int64 `toml:"receipts_max_bytes"`
}

// CacheDef is what a file says of wrun's private build caches (the state
// of sandboxed runs, one key per workspace and authority).
type CacheDef struct {
	// MaxSize bounds them all: the least recently used go when a run
	// ends beyond it ("2GiB", or a number of bytes).
	MaxSize *ByteSize `toml:"max_size"`
}

// RoleDef is a role as a file defines it.
type RoleDef struct {
	Description    *string  `toml:"description"`
	Grant          *string  `toml:"grant"`
	Model          *string  `toml:"model"`
	Thinking       *string  `toml:"thinking"`
	ThinkingLevels []string `toml:"thinking_levels"`
}

// ModelDef is what a file says about a model: the thinking levels it
// supports.
type ModelDef struct {
	Thinking []string `toml:"thinking"`
}

// Error is a malformed or refused config file: its message is one line
// naming the file, the line and the key.
type Error struct {
	File string
	Line int
	Key  string
	Msg  string
	err  error // the cause, when reading failed
}

// Unwrap returns the cause of a read failure.
func (e *Error) Unwrap() error { return e.err }

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Key == "" {
		return fmt.Sprintf("%s: %s", loc, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", loc, e.Key, e.Msg)
}

// errAt is an Error at key of f.
func (f *File) errAt(key, format string, a ...any) *Error {
	return &Error{File: f.Path, Line: f.line(key), Key: key, Msg: oneLine(fmt.Sprintf(format, a...))}
}

// line is the line key was set on; for a key the file did not set, the
// line of the nearest table above it that it did; 0 when none.
func (f *File) line(key string) int {
	for k := key; k != ""; {
		if n := f.lines[k]; n > 0 {
			return n
		}
		i := strings.LastIndexByte(k, '.')
		if i < 0 {
			break
		}
		k = k[:i]
	}
	return 0
}

var typeErrRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): (.*)`)
})

// ReadFile reads the config file at path. A missing file is (nil, nil).
func ReadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &Error{File: path, Msg: oneLine(err.Error()), err: err}
	}
	return Parse(path, b)
}

// Parse reads a config file's text; path names it in errors. Unknown keys
// are errors: a misspelt setting must not be silently ignored.
func Parse(path string, data []byte) (*File, error) {
	f := &File{Path: path}
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(f)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, &Error{File: path, Line: pe.Position.Line, Key: pe.LastKey, Msg: oneLine(pe.Message)}
		}
		// Type errors: "toml: line N (last key "K"): message".
		if m := typeErrRE().FindStringSubmatch(err.Error()); m != nil {
			line, _ := strconv.Atoi(m[1])
			return nil, &Error{File: path, Line: line, Key: m[2], Msg: oneLine(m[3])}
		}
		return nil, &Error{File: path, Msg: oneLine(strings.TrimPrefix(err.Error(), "toml: "))}
	}
	f.lines = keyLines(data)
	if und := md.Undecoded(); len(und) > 0 {
		k := strings.Join(und[0], ".")
		return nil, f.errAt(k, "unknown setting; known: %s", known(und[0]))
	}
	return f, f.check()
}

// known lists the keys accepted where k lies.
func known(k toml.Key) string {
	switch {
	case len(k) >= 1 && k[0] == "defaults":
		return "defaults.grant, ceiling, approver, approver_timeout, keep_env, allow_read, hide, tools, conductor_dir, receipts_max_bytes"
	case len(k) >= 1 && k[0] == "roles":
		return "roles.NAME.description, grant, model, thinking, thinking_levels"
	case len(k) >= 1 && k[0] == "models":
		return "models.NAME.thinking"
	case len(k) >= 1 && k[0] == "cache":
		return "cache.max_size"
	}
	return "the tables [defaults], [roles.NAME], [models.NAME], [cache]"
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// keyLines maps each dotted key a TOML text sets, and each table it
// opens, to its line. It reads the line structure only (table headers and
// key = value lines), which is all Error needs to point at a key; values
// spanning lines are skipped over by their quotes and brackets.
func keyLines(data []byte) map[string]int {
	out := map[string]int{}
	table := ""
	depth := 0 // open brackets of a multi-line array or inline table
	inML := "" // open multi-line string delimiter
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if inML != "" {
			if strings.Contains(line, inML) {
				inML = ""
			}
			continue
		}
		if depth > 0 {
			depth += strings.Count(line, "[") + strings.Count(line, "{") - strings.Count(line, "]") - strings.Count(line, "}")
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] == '[' {
			h := strings.Trim(line, "[] \t")
			if i := strings.Index(h, "#"); i >= 0 {
				h = strings.TrimRight(h[:i], "] \t")
			}
			table = joinKey(splitKey(h))
			if _, ok := out[table]; !ok {
				out[table] = n
			}
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		key := joinKey(splitKey(strings.TrimSpace(k)))
		if table != "" {
			key = table + "." + key
		}
		if _, ok := out[key]; !ok {
			out[key] = n
		}
		v = strings.TrimSpace(v)
		for _, d := range []string{`"""`, `'''`} {
			if strings.HasPrefix(v, d) && strings.Count(v, d) == 1 {
				inML = d
			}
		}
		depth = strings.Count(v, "[") + strings.Count(v, "{") - strings.Count(v, "]") - strings.Count(v, "}")
		if depth < 0 {
			depth = 0
		}
	}
	return out
}

// splitKey splits a dotted TOML key, unquoting quoted parts.
func splitKey(s string) []string {
	var parts []string
	var cur strings.Builder
	quote := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '"' || c == '\'':
			quote = c
		case c == '.':
			parts = append(parts, strings.TrimSpace(cur.String()))
			cur.Reset()
		case c == ' ' || c == '\t':
		default:
			cur.WriteByte(c)
		}
	}
	return append(parts, strings.TrimSpace(cur.String()))
}

func joinKey(parts []string) string { return strings.Join(parts, ".") }
