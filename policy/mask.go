package policy

// Maskable reports whether h can be withheld whole (reading, listing and
// everything beneath it, as an empty mount of mode 000 over the path
// would), leaving the directories above it their rights: on Linux, where
// wrun mediates, such a hidden path is carved for the command and the
// calls beside it are wrun's (access.Platform.MaskHidden). That holds
// when no rule lies at or beneath h (a rule inside a hole is an explicit
// grant, which withholding it whole would take away: the readable places
// in the home directory, the devices in /dev), and when h withholds
// reading (withholding whole takes everything). Other
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
