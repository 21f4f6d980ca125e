package policy

// Maskable reports whether a mount can hide h where a mount namespace
// exists: an empty file or directory the child can neither read nor list,
// bound over the path, hides all of it. That holds when no rule lies at or
// beneath h (a rule inside a hole is an explicit grant, which a mask would
// take away: the readable places in the home directory, the devices in
// /dev), and when h withholds reading (a mask takes everything). Other
// holes are carved out of the rules (Carve). Maskable looks at no file: whether the path exists, and is reached without symbolic
// links, is the platform's to check.
func Maskable(h Hole, rules []Rule) bool {
	if h.Withheld&ReadFile == 0 {
		return false
	}
	for _, r := range rules {
		if Within(r.Path, h.Path) {
			return false
		}
	}
	return true
}
