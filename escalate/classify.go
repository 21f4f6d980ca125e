package escalate

import (
	"path/filepath"
	"slices"

	"github.com/wrun-dev/wrun/access"
	"github.com/wrun-dev/wrun/grant"
	"github.com/wrun-dev/wrun/policy"
	"github.com/wrun-dev/wrun/sandbox"
	"github.com/wrun-dev/wrun/verify"
)

// The values of WithheldBy.Field besides the grant's own field names
// ("files", "shell", "network", "desktop").
const (
	// FieldProtected: a protected path (git config and hooks, shell rc
	// files, wrun's config), never writable under any grant.
	FieldProtected = "protected"
	// FieldHidden: a hidden path (a credential store, other terminals,
	// device nodes), unreadable under every grant unless named exactly.
	FieldHidden = "hidden"
	// FieldBoundary: the sandbox's own boundary, which no grant widens
	// (signalling a process outside the sandbox).
	FieldBoundary = "boundary"
	// FieldUnknown: wrun could not tell.
	FieldUnknown = "unknown"
)

// WithheldBy says which part of the grant withheld a denial.
type WithheldBy struct {
	// Field is the grant field ("files", "shell", "network", "desktop"),
	// or FieldProtected, FieldHidden, FieldBoundary, FieldUnknown.
	Field string `json:"field"`
	// Rule names the kind of denial, a rule id of the catalogue:
	// "workspace-read-only", "tool-cache", "protected", "network-off", ...
	Rule string `json:"rule"`
	// Path is the policy entry that withheld it, when one did: the
	// protected or hidden path, the tool cache.
	Path string `json:"path,omitempty"`
	// Why says it in plain words.
	Why string `json:"why"`
}

// finding is a classified denial with what the alternatives need.
type finding struct {
	d     sandbox.Denial
	by    WithheldBy
	short string
	acc   policy.Access
	path  string // the denied path, clean
	at    string // where the right is checked
	cache *verify.ToolCache
	hole  string // the protected or hidden path a carved ancestor lost rights to
	why   string // the policy entry's own why, for {why}
	// stays says why no widening would let the act through, when the
	// grant never opened the path but the policy would protect or hide it
	// under any grant that did: widenings are then not offered, and
	// asking the parent says so. It never changes the classification.
	stays string
}

// rightRules are the rules that withhold the rights that are not file
// system rights, one each (network-off stands for network-loopback under
// network=loopback and hosts).
var rightRules = map[string]string{
	access.RightConnectTCP: "network-off", access.RightBindTCP: "network-off", access.RightConnectUDP: "network-off",
	access.RightBindUDP: "network-off", access.RightSocketInet: "network-off",
	access.RightSocketUnix:      "unix-sockets-unconfined",
	access.RightConnectUnix:     "unix-socket",
	access.RightConnectAbstract: "abstract-socket",
	access.RightBindAbstract:    "abstract-bind",
	access.RightSignal:          "signal-scope",
	access.RightSetID:           "setid-file",
	access.RightSendCredentials: "unix-credentials-mediated",
	access.RightPriority:        "priority-scope",
	access.RightTerminal:        "terminal-scope",
	RightGitPush:                "git-push",
	RightConnectHost:            "network-hosts",
}

// Classify says which rule or grant field withheld d under the policy.
func (a *Analyzer) Classify(d sandbox.Denial) WithheldBy { return a.find(d).by }

func (a *Analyzer) find(d sandbox.Denial) finding {
	f := finding{d: d}
	switch rule := rightRules[d.Right]; {
	case rule == "network-off" && a.p.Network.Loopback:
		return a.finish(f, "network-loopback", "")
	case rule != "":
		return a.finish(f, rule, "")
	}
	if d.Path == "" {
		return a.finish(f, "unknown", "")
	}
	f.path = filepath.Clean(d.Path)
	f.acc = policy.ParseAccess(d.Right)
	f.at = f.path
	if f.acc&access.DirRights != 0 {
		f.at = filepath.Dir(f.path)
	}
	writes := f.acc&access.WriteRights != 0 || d.Right == access.RightMetadata
	if writes {
		if pr, ok := a.protectedAt(f); ok {
			f.why = pr.Why
			return a.finishPath(f, "protected", pr.Path)
		}
	}
	m := a.model
	// What withheld the act is the policy's answer, never a second
	// opinion: a hidden path (or, above, a protected one) withheld it only
	// where the grant's rules opened it. Where they never did, the missing
	// rule is the reason, and the protection stays as the reason no
	// widening would help.
	opened := m.Granted(f.at)&f.acc == f.acc
	holes := m.Holes()
	for _, h := range holes {
		if !h.Protected && h.Withheld&f.acc != 0 && policy.Within(f.at, h.Path) && !a.regranted(f.at, h.Path) {
			// A write into a tool cache inside the hidden home is withheld
			// by the cache's rule, not by hiding the home around it.
			if c := a.cacheAt(f.path); writes && c != nil && c.Path != h.Path && policy.Within(c.Path, h.Path) {
				continue
			}
			// A read is withheld by the hidden path itself (its why is
			// what the reader needs); a write the grant never opened, by
			// the missing rule.
			if !opened && writes && h.Path != a.p.Workdir {
				f.stays = h.Why
				break
			}
			f.why = h.Why
			if h.Path == a.p.Workdir && a.p.Grant.Files == grant.FilesNone {
				return a.finishPath(f, "workspace-hidden", h.Path)
			}
			return a.finishPath(f, "hidden", h.Path)
		}
	}
	if writes && f.stays == "" {
		_, f.stays = policy.ProtectedAt(f.path, f.acc, a.p.Workdir, a.facts.Home, a.facts.Exists)
	}
	if f.acc == policy.Refer && m.Granted(f.at)&policy.Refer != 0 {
		return a.finish(f, "refer-gain", "")
	}
	if m.Granted(f.at)&f.acc != f.acc {
		return a.missingRule(f)
	}
	// The rules grant it; a hole beneath the directory took it away.
	for _, h := range holes {
		if h.Withheld&f.acc != 0 && policy.Within(h.Path, f.at) {
			f.hole, f.why = h.Path, h.Why
			if h.Protected {
				return a.finishPath(f, "protected-ancestor", h.Path)
			}
			return a.finishPath(f, "hidden-ancestor", h.Path)
		}
	}
	return a.finish(f, "unknown", "")
}

// missingRule classifies a right no rule grants.
func (a *Analyzer) missingRule(f finding) finding {
	inScope := func() bool {
		if a.p.Grant.Shell >= grant.ShellVerify {
			return false
		}
		for _, v := range a.facts.VerifyScope {
			if policy.Within(f.at, v.Path) || !v.Dir && f.path == v.Path {
				return true
			}
		}
		return false
	}
	if f.acc&access.WriteRights == 0 && !policy.Within(f.path, a.p.Workdir) {
		// What the child reads is named (policy's readable roots):
		// nothing else is.
		return a.finish(f, "not-readable", "")
	}
	if policy.Within(f.path, a.p.Workdir) {
		switch {
		case inScope():
			return a.finish(f, "verify-scope", "")
		case f.acc&access.WriteRights != 0 && slices.Contains(lockfiles, filepath.Base(f.path)):
			return a.finish(f, "lockfile", "")
		}
		return a.finish(f, "workspace-read-only", "")
	}
	if f.acc&access.WriteRights != 0 {
		if c := a.cacheAt(f.path); c != nil {
			f.cache = c
			return a.finishPath(f, "tool-cache", c.Path)
		}
	}
	if inScope() {
		return a.finish(f, "verify-scope", "")
	}
	if a.p.Grant.Files < grant.FilesWrite && f.acc&access.WriteRights != 0 {
		for _, w := range a.facts.WriteScope {
			if w.Dir && policy.Within(f.at, w.Path) || !w.Dir && f.path == w.Path {
				return a.finish(f, "worktree-git-state", "")
			}
		}
	}
	return a.finish(f, "outside-scope", "")
}

func (a *Analyzer) finishPath(f finding, rule, path string) finding {
	f = a.finish(f, rule, f.why)
	f.by.Path = path
	return f
}

// finish fills in the field and the words of rule.
func (a *Analyzer) finish(f finding, rule, why string) finding {
	def := ruleOf(rule)
	f.why = why
	x := a.expander(f, nil)
	f.by = WithheldBy{Field: def.Field, Rule: rule, Why: x.text(def.Why)}
	f.short = x.text(def.Short)
	if f.stays != "" {
		f.short += "; no grant would make it writable"
	}
	if f.why == "" {
		f.why = f.by.Why // what {why} says in the alternatives
	}
	return f
}

// protectedAt finds the protected path of the policy a write to f lands
// on. The policy protects paths only inside its writable rules: a path
// outside them was never opened, and its refusal is the missing rule's.
func (a *Analyzer) protectedAt(f finding) (policy.Protected, bool) {
	removes := f.d.Op == access.OpRename || f.d.Op == access.OpUnlink || f.d.Op == access.OpRmdir || f.d.Op == access.OpLink
	for _, pr := range a.p.Protected {
		if pr.Pin {
			if removes && f.path == pr.Path {
				return pr, true
			}
			continue
		}
		if policy.Within(f.path, pr.Path) || policy.Within(f.at, pr.Path) {
			return pr, true
		}
	}
	return policy.Protected{}, false
}

// regranted reports whether a rule inside the hidden path hole covers at:
// such a rule is an explicit grant the hole does not narrow (a toolchain's
// place in the hidden home), so the hole is not what withheld a right
// there.
func (a *Analyzer) regranted(at, hole string) bool {
	for _, r := range a.p.Rules {
		if r.Path != hole && policy.Within(r.Path, hole) && policy.Within(at, r.Path) {
			return true
		}
	}
	return false
}
