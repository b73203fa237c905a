package direct

// SetAfterAttach sets the test hook run in Attach between registering a session and reading
// its offline cache.
func SetAfterAttach(c *Core, f func()) { c.afterAttach = f }
