package escalate

import (
	"fmt"
	"github.com/wrun-dev/wrun/access"
	"path/filepath"
	"strings"

	"github.com/wrun-dev/wrun/internal/quote"
	"github.com/wrun-dev/wrun/policy"
)

// Lines are the plain-words summary of the request: one line per denial,
// for stderr.
func (r *Request) Lines() []string {
	out := make([]string, 0, len(r.Denials))
	for _, d := range r.Denials {
		out = append(out, d.Summary)
	}
	return out
}

// summary is the one line for a denial: what was denied, why in a few
// words, and the narrowest alternatives.
//
//	wrun: denied write to /home/u/.cargo/registry/x (shell=verify keeps CARGO_HOME read-only). Try: ...
func summary(d DeniedAct, short string) string {
	var b strings.Builder
	b.WriteString(summaryHead(d))
	b.WriteString(timesOf(d.Count))
	if d.Evidence == EvidenceInferred {
		b.WriteString(" [inferred from output]")
	}
	b.WriteString(" (" + quote.Line(short) + ").")
	var tries []string
	beyond := 0
	for _, alt := range d.Alternatives {
		switch {
		case alt.Kind == KindBeyondCeiling:
			beyond++
		case alt.Kind != KindAskParent && len(tries) < 2:
			tries = append(tries, alt.Try)
		}
	}
	if len(tries) == 0 {
		tries = append(tries, "ask the parent")
	}
	b.WriteString(" Try: " + quote.Line(strings.Join(tries, "; or ")))
	if beyond > 0 {
		fmt.Fprintf(&b, " (%d wider option%s beyond the ceiling)", beyond, plural(beyond))
	}
	return b.String()
}

// summaryHead is the start of d's line: what was denied, on what. The
// path and address are the child's choice: quoted, so that nothing in them
// acts on a terminal or reads as more of the line.
func summaryHead(d DeniedAct) string {
	head := "wrun: denied " + verb(d.Op, d.Right)
	if d.Path != "" {
		head += " " + quote.Word(d.Path)
	} else if d.Addr != "" {
		head += " " + quote.Word(d.Addr)
	}
	return head
}

func timesOf(n int) string {
	if n > 1 {
		return fmt.Sprintf(" (%d times)", n)
	}
	return ""
}

// GroupedLines are the one-line summaries of ds for a person, in their
// order, with near-identical lines made one: denials of paths refused the
// same way (the same act, rule and words) and offered the same things to
// try are said once, at the first of them, with how many more paths and
// the directory that holds them all. A harness reads each denial in the
// request; this only spares a person thirteen lines of an npm install
// that say one thing.
func GroupedLines(ds []DeniedAct) []string {
	type group struct {
		first DeniedAct
		paths []string
		count int
	}
	var order []*group
	byKey := map[string]*group{}
	for _, d := range ds {
		key := ""
		if head := summaryHead(d) + timesOf(d.Count); d.Path != "" && strings.HasPrefix(d.Summary, head) {
			key = verb(d.Op, d.Right) + "\x00" + d.WithheldBy.Rule + "\x00" + d.Summary[len(head):]
		}
		if g := byKey[key]; key != "" && g != nil {
			g.paths = append(g.paths, d.Path)
			g.count += max(d.Count, 1)
			continue
		}
		g := &group{first: d, paths: []string{d.Path}, count: max(d.Count, 1)}
		order = append(order, g)
		if key != "" {
			byKey[key] = g
		}
	}
	out := make([]string, 0, len(order))
	for _, g := range order {
		d := g.first
		if len(g.paths) == 1 {
			out = append(out, d.Summary)
			continue
		}
		head := summaryHead(d)
		rest := d.Summary[len(head+timesOf(d.Count)):]
		more := fmt.Sprintf(" and %d more path%s", len(g.paths)-1, plural(len(g.paths)-1))
		if dir := commonDir(g.paths); dir != "/" && dir != "." {
			more += " under " + quote.Word(dir)
		}
		if g.count > len(g.paths) {
			more += fmt.Sprintf(" (%d times in all)", g.count)
		}
		out = append(out, head+more+rest)
	}
	return out
}

// commonDir is the deepest directory at or above every path.
func commonDir(paths []string) string {
	dir := filepath.Clean(paths[0])
	for _, p := range paths[1:] {
		for !policy.Within(filepath.Clean(p), dir) {
			next := filepath.Dir(dir)
			if next == dir {
				return dir
			}
			dir = next
		}
	}
	return dir
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// verb says what the child tried, from the operation and the missing right.
func verb(op, right string) string {
	switch right {
	case access.RightConnectTCP, access.RightConnectUnix, access.RightConnectAbstract:
		return "connect to"
	case access.RightConnectUDP:
		return "send to"
	case access.RightBindTCP, access.RightBindUDP:
		return "bind"
	case access.RightSocketInet:
		return "open a network socket"
	case access.RightSocketUnix:
		return "open a UNIX socket"
	case access.RightMetadata:
		return "change the metadata of"
	case access.RightSetID:
		return "set the setuid or setgid bit on"
	case access.RightSendCredentials:
		return "send"
	case access.RightPriority:
		return "change the priority or limits of"
	case access.RightTerminal:
		return "open the terminal"
	case access.RightBindAbstract:
		return "bind the abstract name"
	case RightGitPush:
		return "git push to"
	}
	switch op {
	case access.OpRename:
		return "move"
	case access.OpLink:
		return "link"
	case access.OpConnect:
		return "connect to"
	case access.OpBind:
		return "bind"
	}
	acc := policy.ParseAccess(right)
	switch {
	case acc&(policy.WriteFile|policy.Truncate) != 0:
		return "write to"
	case acc&policy.MakeReg != 0:
		return "create"
	case acc&policy.MakeDir != 0:
		return "create directory"
	case acc&policy.MakeSym != 0:
		return "create symlink"
	case acc&(policy.MakeSock|policy.MakeFifo|policy.MakeChar|policy.MakeBlock) != 0:
		return "create special file"
	case acc&policy.RemoveFile != 0:
		return "delete"
	case acc&policy.RemoveDir != 0:
		return "remove directory"
	case acc&policy.Refer != 0:
		return "move"
	case acc&policy.ReadFile != 0:
		return "read"
	case acc&policy.ReadDir != 0:
		return "list"
	case acc&policy.Execute != 0:
		return "execute"
	}
	if op != "" {
		return op
	}
	return "access"
}
