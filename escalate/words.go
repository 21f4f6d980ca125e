package escalate

import (
	"fmt"
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
	b.WriteString("wrun: denied ")
	b.WriteString(verb(d.Op, d.Right))
	// The path and address are the child's choice: quoted, so that
	// nothing in them acts on a terminal or reads as more of the line.
	if d.Path != "" {
		b.WriteString(" " + quote.Word(d.Path))
	} else if d.Addr != "" {
		b.WriteString(" " + quote.Word(d.Addr))
	}
	if d.Count > 1 {
		fmt.Fprintf(&b, " (%d times)", d.Count)
	}
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

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// verb says what the child tried, from the operation and the missing right.
func verb(op, right string) string {
	switch right {
	case RightConnectTCP, RightConnectUnix, RightConnectAbstract:
		return "connect to"
	case RightBindTCP:
		return "listen on"
	case RightSocketInet:
		return "open a network socket"
	case RightSocketUnix:
		return "open a UNIX socket"
	case RightMetadata:
		return "change the metadata of"
	case RightSetID:
		return "set the setuid or setgid bit on"
	case RightSendCredentials:
		return "send"
	case RightPriority:
		return "change the priority or limits of"
	case RightTerminal:
		return "open the terminal"
	case RightBindAbstract:
		return "bind the abstract name"
	case RightGitPush:
		return "git push to"
	}
	switch op {
	case OpRename:
		return "move"
	case OpLink:
		return "link"
	case OpConnect:
		return "connect to"
	case OpBind:
		return "bind"
	}
	acc := ParseRights(right)
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
