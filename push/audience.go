package push

// Audience is what a dry run of a push finds: the targets a real push would reach now, per
// delivery channel (Tally.Targets; Tally.InvalidTokens counts the listed device ids known dead,
// which a real push counts as targets but never sends to), and how many installations
// (index rows and looked-up ids) were read to count them.
type Audience struct {
	Channels Counts
	Rows     int64
}
