package main

// The person's personalization (harness/personality.json): config.yaml's
// personality (a preset of prompts/personality/), personality_custom and
// instructions, or an instance's /v1/me/personalization in their place,
// made into the block at the end of a session's system prompt.
//
// Floor 2 (persistence and config): it calls only the ground (harness.go,
// text.go) and config.go.

import (
	"strings"
)

// personalization is the person's, as /v1/me/personalization gives it or
// as config.yaml's three keys hold it.
type personalization struct {
	Enabled           *bool  `json:"enabled,omitempty"`
	Available         *bool  `json:"available,omitempty"`
	Personality       string `json:"personality"`
	PersonalityCustom string `json:"personality_custom"`
	Instructions      string `json:"instructions"`
}

// personalitySpec is harness/personality.json.
type personalitySpec struct {
	About    string            `json:"about"`
	Heading  string            `json:"heading"`
	Presets  []string          `json:"presets"`
	NoPreset []string          `json:"no_preset"` // names that mean no preset, said without a notice
	Keys     []string          `json:"keys"`
	Texts    map[string]string `json:"texts"`
}

var personalitySpecFile = &harnessFile[personalitySpec]{name: "harness/personality.json"}

//go:noinline
func thePersonalitySpec() *personalitySpec { return personalitySpecFile.get() }

func personalityText(key string, kv ...any) string {
	return loopText(thePersonalitySpec().Texts, key, kv...)
}

// personalityPreset is a preset's text, and whether lembas knows the name.
func personalityPreset(name string) (string, bool) {
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" || !contains(thePersonalitySpec().Presets, name) {
		return "", false
	}
	return strings.TrimSpace(theSpec().Prompts["personality/"+name+".md"]), true
}

// unknownPreset is the notice for a preset name lembas does not know, ""
// for a known or empty one. source names where it came from.
func unknownPreset(p *personalization, source string) string {
	if p == nil || strings.TrimSpace(p.Personality) == "" || contains(thePersonalitySpec().NoPreset, strings.ToLower(strings.TrimSpace(p.Personality))) {
		return ""
	}
	if _, ok := personalityPreset(p.Personality); ok {
		return ""
	}
	return personalityText("unknown_preset", "source", source, "name", strings.TrimSpace(p.Personality),
		"presets", strings.Join(thePersonalitySpec().Presets, ", "))
}

// personalizationBlock is the block's body: the preset's text, the custom
// personality, then the instructions. Disabled or unavailable is none, and
// a preset lembas does not know is none (its other two still apply).
func personalizationBlock(p *personalization) string {
	if p == nil || (p.Enabled != nil && !*p.Enabled) || (p.Available != nil && !*p.Available) {
		return ""
	}
	preset, _ := personalityPreset(p.Personality)
	var parts []string
	for _, t := range []string{preset, p.PersonalityCustom, p.Instructions} {
		if t = strings.TrimSpace(t); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n\n")
}

// withPersonalization is a system prompt with its personalization block
// replaced by p's (the block is always the prompt's last).
func withPersonalization(system string, p *personalization) string {
	system = withoutPersonalization(system)
	if b := personalizationBlock(p); b != "" {
		return system + "\n\n" + thePersonalitySpec().Heading + "\n\n" + b
	}
	return system
}

// withoutPersonalization is a system prompt without its block.
func withoutPersonalization(system string) string {
	if i := strings.Index(system, "\n\n"+thePersonalitySpec().Heading+"\n\n"); i >= 0 {
		return system[:i]
	}
	return system
}

// localPersonalization is config.yaml's, nil when it sets none of the
// three keys (or cannot be read: the session's start says why).
func localPersonalization() *personalization {
	c, err := loadConfig()
	if err != nil || c.Personalization == (personalization{}) {
		return nil
	}
	p := c.Personalization
	return &p
}

// personalityKey reads one of config.yaml's three keys; personality must
// name a preset.
func (d configDecoder) personalityKey(n *yamlNode, key string, p *personalization) error {
	v, err := d.text(n, key)
	if err != nil {
		return err
	}
	switch key {
	case "personality":
		if _, ok := personalityPreset(v); !ok && strings.TrimSpace(v) != "" && !contains(thePersonalitySpec().NoPreset, strings.ToLower(strings.TrimSpace(v))) {
			return d.errf(n, "%s", personalityText("unknown_local", "name", v, "presets", strings.Join(thePersonalitySpec().Presets, ", ")))
		}
		p.Personality = strings.ToLower(strings.TrimSpace(v))
	case "personality_custom":
		p.PersonalityCustom = v
	case "instructions":
		p.Instructions = v
	default:
		return errorf("%s is not a personalization key", key)
	}
	return nil
}
