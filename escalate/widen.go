package escalate

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/policy"
)

// Widen is what an alternative widens, as a value: Kind is one of
// KindAllowWrite, KindAllowRead, KindAllowUnix (with Path), KindAllowHost
// (with Host) or KindGrant (with Grant, the whole grant the retry runs
// under). The zero value widens nothing: a route, asking the parent.
// Alternative.Args is its rendering as flags (Args), for display and the
// request's JSON.
type Widen struct {
	Kind  string
	Path  string
	Host  grant.Host
	Grant grant.Grant
}

// flags are the wrun flag of each kind of widening, and what it takes.
var flags = map[string][2]string{
	KindAllowWrite: {"--allow-write", "PATH"},
	KindAllowRead:  {"--allow-read", "PATH"},
	KindAllowUnix:  {"--allow-unix", "PATH"},
	KindAllowHost:  {"--allow-host", "HOST:PORT"},
	KindGrant:      {"--grant", "SPEC"},
}

// Args renders w as the wrun flags a retry adds: ["--allow-write", PATH],
// ["--allow-host", HOST:PORT], ["--grant", SPEC] (which replaces the run's
// --grant), ...; empty when it widens nothing.
func (w Widen) Args() []string {
	f, ok := flags[w.Kind]
	switch {
	case !ok:
		return []string{}
	case w.Kind == KindAllowHost:
		return []string{f[0], w.Host.String()}
	case w.Kind == KindGrant:
		return []string{f[0], w.Grant.Spec()}
	}
	return []string{f[0], w.Path}
}

// needs is the grant whose authority w needs, from the run's grant cur in
// workspace workdir: an extra path is bounded through the field it widens
// (one in the workspace needs files=write, one outside it shell=full; a
// UNIX socket desktop=on; a host the network value its entry needs); a
// readable path needs nothing more.
func (w Widen) needs(cur grant.Grant, workdir string) grant.Grant {
	switch w.Kind {
	case KindAllowWrite:
		if policy.Within(w.Path, workdir) {
			return applySet(cur, map[string]string{"files": "write"})
		}
		return applySet(cur, map[string]string{"shell": "full"})
	case KindAllowUnix:
		return applySet(cur, map[string]string{"desktop": "on"})
	case KindAllowHost:
		cur.Network = max(cur.Network, w.Host.Needs())
	case KindGrant:
		return w.Grant
	}
	return cur
}

// checked returns the widening of alt, offered as id, for approval: of
// the alternative's own kind, a path absolute and clean. Anything else is
// an error naming what the flags should have been.
func checked(id string, alt Alternative) (Widen, error) {
	w := alt.Widen
	ok := w.Kind == alt.Kind
	if w.Kind == KindAllowWrite || w.Kind == KindAllowRead || w.Kind == KindAllowUnix {
		ok = ok && filepath.IsAbs(w.Path)
		w.Path = filepath.Clean(w.Path)
	}
	if !ok {
		f := flags[alt.Kind]
		return Widen{}, fmt.Errorf("approving %s: args %q are not %s %s", id, alt.Args, f[0], f[1])
	}
	return w, nil
}

// parseWiden reads flags back into a widening: what a request read from
// its JSON form offers. It is the one place flags are parsed.
func parseWiden(args []string) (Widen, error) {
	if len(args) != 2 {
		return Widen{}, fmt.Errorf("args %q are not one widening", args)
	}
	for kind, f := range flags {
		if args[0] != f[0] {
			continue
		}
		w := Widen{Kind: kind, Path: args[1]}
		var err error
		switch kind {
		case KindAllowHost:
			w.Path = ""
			w.Host, err = grant.ParseHost(args[1])
		case KindGrant:
			w.Path = ""
			w.Grant, err = grant.Parse(args[1])
		}
		if err != nil {
			return Widen{}, err
		}
		return w, nil
	}
	return Widen{}, fmt.Errorf("args %q are not one widening", args)
}

// UnmarshalJSON reads an alternative of a request's JSON form; its args
// are read back into Widen, which stays zero when they are not one
// widening (approving it is then refused).
func (a *Alternative) UnmarshalJSON(b []byte) error {
	type plain Alternative
	if err := json.Unmarshal(b, (*plain)(a)); err != nil {
		return err
	}
	if w, err := parseWiden(a.Args); err == nil {
		a.Widen = w
	}
	return nil
}
