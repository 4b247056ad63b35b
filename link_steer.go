package main

// The steered event as the link sends it (acp.md `steered`: `texts`,
// `ids?`): the engine says one steered text at a time; the link names it
// in a list, with the _lembas/steer messageId it came with, so the web UI
// can mark which of its queued messages the model took in.

// linkSteerIDs pairs each steered text with its messageId, per session,
// until the engine takes it in or the turn ends (then it is unsent).
type linkSteerIDs struct {
	mu    mutex
	marks map[string][]steerMark // session id → in the order sent
}

type steerMark struct{ text, id string }

// add remembers a steered text's message id (none: nothing to name).
func (s *linkSteerIDs) add(sessionID, text, id string) {
	if id == "" {
		return
	}
	s.mu.Lock()
	if s.marks == nil {
		s.marks = map[string][]steerMark{}
	}
	s.marks[sessionID] = append(s.marks[sessionID], steerMark{text, id})
	s.mu.Unlock()
}

// take is the id of the first mark with this text, forgotten once named.
func (s *linkSteerIDs) take(sessionID, text string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ms := s.marks[sessionID]
	for i, m := range ms {
		if m.text == text {
			s.marks[sessionID] = append(ms[:i:i], ms[i+1:]...)
			return m.id
		}
	}
	return ""
}

// forget drops a session's marks: its turn ended, what is left is unsent.
func (s *linkSteerIDs) forget(sessionID string) {
	s.mu.Lock()
	delete(s.marks, sessionID)
	s.mu.Unlock()
}

// steeredEvent reshapes the engine's steered event for the link.
func (svc *linkService) steeredEvent(sessionID string, ev event, m map[string]any) {
	delete(m, "text")
	m["texts"] = []string{ev.Text}
	if id := svc.steers.take(sessionID, ev.Text); id != "" {
		m["ids"] = []string{id}
	}
}
