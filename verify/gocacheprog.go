package verify

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The GOCACHEPROG protocol (cmd/go/internal/cacheprog): the go command sends
// one JSON request per line; a put with a body is followed by a line
// holding the body as a base64 JSON string. Each request gets one JSON
// response; the first response (ID 0) lists the commands served.
type cacheRequest struct {
	ID       int64
	Command  string
	ActionID []byte `json:",omitempty"`
	OutputID []byte `json:",omitempty"`
	BodySize int64  `json:",omitempty"`
}

type cacheResponse struct {
	ID            int64
	Err           string     `json:",omitempty"`
	KnownCommands []string   `json:",omitempty"`
	Miss          bool       `json:",omitempty"`
	OutputID      []byte     `json:",omitempty"`
	Size          int64      `json:",omitempty"`
	Time          *time.Time `json:",omitempty"`
	DiskPath      string     `json:",omitempty"`
}

// Timing of the private cache's upkeep, as the go command's own disk cache
// does it: an entry's mtime is refreshed at most hourly when used, and once
// a day entries unused for five days are removed.
const (
	cacheMtimeInterval = time.Hour
	cacheTrimInterval  = 24 * time.Hour
	cacheTrimLimit     = 5 * 24 * time.Hour
)

// GoCacheSeeded names the file ServeGoCache leaves in the private cache
// when a go command has closed it: from then on the private cache holds
// what the workspace needs, and later runs give it to the go command as a
// plain GOCACHE, without the cost of a cache program.
const GoCacheSeeded = "wrun-seeded"

// ServeGoCache serves the go command's build cache over r and w (the
// GOCACHEPROG protocol) until the go command closes it. Entries are looked
// up in private, then in each readOnly cache, from which they are copied
// into private; new entries are written to private only. Both use the go
// command's own on-disk layout, so private is usable as a plain GOCACHE.
func ServeGoCache(r io.Reader, w io.Writer, private string, readOnly []string) error {
	if err := os.MkdirAll(private, 0o755); err != nil {
		return fmt.Errorf("go cache: %w", err)
	}
	c := goCache{private: private, readOnly: readOnly, now: time.Now()}
	out := bufio.NewWriter(w)
	enc := json.NewEncoder(out)
	reply := func(res cacheResponse) error {
		if err := enc.Encode(res); err != nil {
			return fmt.Errorf("go cache: writing a response: %w", err)
		}
		return out.Flush()
	}
	if err := reply(cacheResponse{KnownCommands: []string{"get", "put", "close"}}); err != nil {
		return err
	}
	dec := json.NewDecoder(bufio.NewReader(r))
	for {
		var req cacheRequest
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil // the go command closed our stdin
			}
			return fmt.Errorf("go cache: reading a request: %w", err)
		}
		var res cacheResponse
		var err error
		switch req.Command {
		case "get":
			res, err = c.get(req.ActionID)
		case "put":
			var body []byte
			if req.BodySize > 0 {
				var b64 string
				if err := dec.Decode(&b64); err != nil {
					return fmt.Errorf("go cache: reading a body: %w", err)
				}
				if body, err = base64.StdEncoding.DecodeString(b64); err != nil {
					return fmt.Errorf("go cache: decoding a body: %w", err)
				}
			}
			res, err = c.put(req.ActionID, req.OutputID, body)
		case "close":
			c.trim()
			_ = writeFileAtomic(filepath.Join(private, GoCacheSeeded), []byte(c.now.UTC().Format(time.RFC3339)+"\n"))
			return reply(cacheResponse{ID: req.ID})
		default:
			err = fmt.Errorf("unknown command %q", req.Command)
		}
		res.ID = req.ID
		if err != nil {
			res = cacheResponse{ID: req.ID, Err: err.Error()}
		}
		if err := reply(res); err != nil {
			return err
		}
	}
}

type goCache struct {
	private  string
	readOnly []string
	now      time.Time
}

const cacheHashSize = 32

// cacheEntrySize is the size of an action entry file:
// "v1 <hex action> <hex output> <size, 20 wide> <unix nanos, 20 wide>\n".
const cacheEntrySize = 2 + 1 + 2*cacheHashSize + 1 + 2*cacheHashSize + 1 + 20 + 1 + 20 + 1

func cacheFile(dir string, id []byte, kind string) string {
	h := hex.EncodeToString(id)
	return filepath.Join(dir, h[:2], h+"-"+kind)
}

func (c *goCache) get(action []byte) (cacheResponse, error) {
	if len(action) != cacheHashSize {
		return cacheResponse{}, errors.New("bad action ID")
	}
	for i, dir := range append([]string{c.private}, c.readOnly...) {
		out, size, tm, ok := readCacheEntry(dir, action)
		if !ok {
			continue
		}
		path := cacheFile(dir, out, "d")
		fi, err := os.Stat(path)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() != size {
			continue
		}
		if i == 0 {
			c.markUsed(cacheFile(dir, action, "a"))
			c.markUsed(path)
		} else if p, err := c.copyIn(action, out, size, tm, path); err == nil {
			path = p
		}
		return cacheResponse{OutputID: out, Size: size, Time: &tm, DiskPath: path}, nil
	}
	return cacheResponse{Miss: true}, nil
}

// readCacheEntry reads an action entry in the go command's format.
func readCacheEntry(dir string, action []byte) (out []byte, size int64, tm time.Time, ok bool) {
	f, err := os.Open(cacheFile(dir, action, "a"))
	if err != nil {
		return nil, 0, tm, false
	}
	defer f.Close()
	buf := make([]byte, cacheEntrySize+1)
	if n, _ := io.ReadFull(f, buf); n != cacheEntrySize {
		return nil, 0, tm, false
	}
	fields := strings.Fields(string(buf[:cacheEntrySize]))
	if len(fields) != 5 || fields[0] != "v1" || fields[1] != hex.EncodeToString(action) {
		return nil, 0, tm, false
	}
	out, err = hex.DecodeString(fields[2])
	if err != nil || len(out) != cacheHashSize {
		return nil, 0, tm, false
	}
	size, err1 := strconv.ParseInt(fields[3], 10, 64)
	nanos, err2 := strconv.ParseInt(fields[4], 10, 64)
	if err1 != nil || err2 != nil || size < 0 || nanos < 0 {
		return nil, 0, tm, false
	}
	return out, size, time.Unix(0, nanos), true
}

func (c *goCache) put(action, output, body []byte) (cacheResponse, error) {
	if len(action) != cacheHashSize || len(output) != cacheHashSize {
		return cacheResponse{}, errors.New("bad action or output ID")
	}
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], output) {
		return cacheResponse{}, errors.New("output ID does not match the body")
	}
	path := cacheFile(c.private, output, "d")
	if fi, err := os.Stat(path); err != nil || fi.Size() != int64(len(body)) {
		if err := writeFileAtomic(path, body); err != nil {
			return cacheResponse{}, err
		}
	}
	entry := fmt.Sprintf("v1 %x %x %20d %20d\n", action, output, len(body), c.now.UnixNano())
	if err := writeFileAtomic(cacheFile(c.private, action, "a"), []byte(entry)); err != nil {
		return cacheResponse{}, err
	}
	return cacheResponse{DiskPath: path}, nil
}

// copyIn copies an entry found in a read-only cache into the private one
// (a copy, never a link: the private cache is the sandbox's to write) and
// returns the copy's output file. Once the private cache holds what a
// workspace needs, the go command can use it directly, without wrun.
func (c *goCache) copyIn(action, out []byte, size int64, tm time.Time, from string) (string, error) {
	path := cacheFile(c.private, out, "d")
	if fi, err := os.Stat(path); err != nil || fi.Size() != size {
		src, err := os.Open(from)
		if err != nil {
			return "", err
		}
		defer src.Close()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return "", err
		}
		// Written in place, not renamed: the go command takes an output
		// file only at its full size, and one renaming per entry doubled
		// the cost of a first run on a slow disk.
		os.Remove(path)
		dst, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return "", err
		}
		n, err := io.Copy(dst, io.LimitReader(src, size+1))
		if cerr := dst.Close(); err == nil {
			err = cerr
		}
		if err == nil && n != size {
			err = errors.New("the entry changed size while being copied")
		}
		if err != nil {
			os.Remove(path)
			return "", err
		}
	}
	entry := fmt.Sprintf("v1 %x %x %20d %20d\n", action, out, size, tm.UnixNano())
	if err := writeFileAtomic(cacheFile(c.private, action, "a"), []byte(entry)); err != nil {
		return "", err
	}
	return path, nil
}

func (c *goCache) markUsed(path string) {
	if fi, err := os.Stat(path); err == nil && c.now.Sub(fi.ModTime()) >= cacheMtimeInterval {
		_ = os.Chtimes(path, c.now, c.now)
	}
}

// trim removes private entries unused for cacheTrimLimit, at most once per
// cacheTrimInterval, recorded in trim.txt as the go command does.
func (c *goCache) trim() {
	stamp := filepath.Join(c.private, "trim.txt")
	if b, err := os.ReadFile(stamp); err == nil {
		if t, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && c.now.Sub(time.Unix(t, 0)) < cacheTrimInterval {
			return
		}
	}
	cutoff := c.now.Add(-cacheTrimLimit - cacheMtimeInterval)
	subdirs, _ := os.ReadDir(c.private)
	for _, sd := range subdirs {
		if !sd.IsDir() || len(sd.Name()) != 2 {
			continue
		}
		dir := filepath.Join(c.private, sd.Name())
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if fi, err := e.Info(); err == nil && fi.ModTime().Before(cutoff) {
				_ = os.Remove(filepath.Join(dir, e.Name()))
			}
		}
	}
	_ = writeFileAtomic(stamp, []byte(strconv.FormatInt(c.now.Unix(), 10)+"\n"))
}

// writeFileAtomic writes path through a temporary file and a rename, so a
// reader never sees it half written.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp-" + randomID()
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// randomID is 12 random hex digits, for temporary names.
func randomID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// isNotExist reports whether err says a path does not exist.
func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
