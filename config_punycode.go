package main

// An international host name in its ASCII form: each label that is not
// ASCII lowered and written as "xn--" and its RFC 3492 (punycode)
// encoding, the form IDNA gives and curl, Go and browsers send. Written
// here because lembas's modules are the standard library and three x/
// ones, and x/net's idna brings x/text. What IDNA would first have to map
// or normalize is refused, not guessed at: a symbol or a space, a
// combining mark on a Latin, Greek or Cyrillic letter (written decomposed,
// where a composed letter exists), and a label that mixes right-to-left
// and left-to-right letters (the bidi rule).

import (
	"strings"
	"unicode"
)

// asciiHost is host with each label that is not ASCII in its xn-- form;
// the error says what in which label could not be.
func asciiHost(host string) (string, error) {
	labels := strings.Split(strings.ToLower(host), ".")
	for i, l := range labels {
		ascii, rtl, ltr := true, false, false
		var prev rune
		for _, r := range l {
			switch {
			case r < 0x80:
				ltr = ltr || unicode.IsLetter(r)
			case unicode.In(r, unicode.Mn, unicode.Me, unicode.Mc):
				ascii = false
				if unicode.In(prev, unicode.Latin, unicode.Greek, unicode.Cyrillic) {
					return "", errorf("a combining mark follows a letter in %q: write the letter composed", l)
				}
			case unicode.IsLetter(r) || unicode.IsDigit(r):
				ascii = false
				if unicode.In(r, unicode.Hebrew, unicode.Arabic, unicode.Syriac, unicode.Thaana, unicode.Nko, unicode.Samaritan, unicode.Mandaic) {
					rtl = true
				} else if unicode.IsLetter(r) {
					ltr = true
				}
			default:
				return "", errorf("%q holds %q, which is not a letter or a digit", l, r)
			}
			prev = r
		}
		if rtl && ltr {
			return "", errorf("%q mixes right-to-left and left-to-right letters", l)
		}
		if ascii {
			continue
		}
		enc, err := punycode(l)
		if err != nil {
			return "", err
		}
		if len(enc) > 59 {
			return "", errorf("%q is longer than 63 characters in its ASCII form", l)
		}
		labels[i] = "xn--" + enc
	}
	return strings.Join(labels, "."), nil
}

// punycode encodes one label (RFC 3492, section 6.3).
func punycode(label string) (string, error) {
	const (
		base, tmin, tmax, skew, damp = 36, 1, 26, 38, 700
		initialBias, initialN        = 72, 128
	)
	digit := func(d int) byte {
		if d < 26 {
			return byte('a' + d)
		}
		return byte('0' + d - 26)
	}
	adapt := func(delta, points int, first bool) int {
		if first {
			delta /= damp
		} else {
			delta /= 2
		}
		delta += delta / points
		k := 0
		for delta > ((base-tmin)*tmax)/2 {
			delta /= base - tmin
			k += base
		}
		return k + (base-tmin+1)*delta/(delta+skew)
	}
	runes := []rune(label)
	var out []byte
	for _, r := range runes {
		if r < 0x80 {
			out = append(out, byte(r))
		}
	}
	b := len(out)
	h := b
	if b > 0 {
		out = append(out, '-')
	}
	n, delta, bias := initialN, 0, initialBias
	for h < len(runes) {
		m := rune(0x7fffffff)
		for _, r := range runes {
			if int(r) >= n && r < m {
				m = r
			}
		}
		if (int(m) - n) > (1<<31-1-delta)/(h+1) {
			return "", errorNew("a label too long to write in ASCII")
		}
		delta += (int(m) - n) * (h + 1)
		n = int(m)
		for _, r := range runes {
			if int(r) < n {
				delta++
			}
			if int(r) == n {
				q := delta
				for k := base; ; k += base {
					t := k - bias
					if t < tmin {
						t = tmin
					} else if t > tmax {
						t = tmax
					}
					if q < t {
						break
					}
					out = append(out, digit(t+(q-t)%(base-t)))
					q = (q - t) / (base - t)
				}
				out = append(out, digit(q))
				bias = adapt(delta, h+1, h == b)
				delta = 0
				h++
			}
		}
		delta++
		n++
	}
	return string(out), nil
}
