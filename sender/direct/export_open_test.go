package direct

// OpenConns is the number of connections the server holds.
func OpenConns(s *Server) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}
