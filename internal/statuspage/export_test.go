package statuspage

// EventEncodes returns how many changes the page's watches encoded.
func EventEncodes(h *Handler) int { return h.events.Encodes() }
