package restcatalog

// WritersBusy is how many requests with a body s serves now.
func WritersBusy(s *Server) int { return len(s.writers) }
