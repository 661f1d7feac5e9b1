package discovery

import (
	"sort"
	"strings"
)

// knownPrimals are the primal and socket names of the ecosystem, used to
// split family-scoped socket names. Family ids may contain dashes
// (neural-api-westgate-tower-155f), so a name is split by its longest known
// prefix, never at the first dash.
var knownPrimals = []string{
	"beardog", "songbird", "rhizocrypt", "loamspine", "sweetgrass", "nestgate",
	"squirrel", "toadstool", "petaltongue", "biomeos", "primalspring",
	"neural-api", "biomeos-api", "discovery", "skunkbat", "coralreef",
	// capability-domain names that appear as sockets
	"ai", "dag", "ledger", "crypto", "storage", "compute", "provenance",
	"braid", "network", "mesh", "ui",
}

// KnownPrimals returns the built-in list of primal and domain names used to
// split family-scoped socket names.
func KnownPrimals() []string { return append([]string(nil), knownPrimals...) }

// FamilyMatcher splits socket base names (the file name without ".sock")
// into a primal name and a family id.
type FamilyMatcher struct {
	known []string // sorted longest first
	// families are family ids seen (the preferred one first).
	families []string
}

// NewFamilyMatcher builds a matcher from known primal names (KnownPrimals
// plus extra) and the family ids to look for (the preferred one first).
func NewFamilyMatcher(extra []string, families ...string) *FamilyMatcher {
	m := &FamilyMatcher{known: knownSorted}
	if len(extra) > 0 {
		m.known = sortKnown(append(KnownPrimals(), extra...))
	}
	for _, f := range families {
		m.AddFamily(f)
	}
	return m
}

// knownSorted is knownPrimals as a matcher keeps them, built once: the
// prober builds a matcher for every probe (FamilyScope.Family), and
// building this list each time (a map, a sort) was a sixth of a liveness
// probe's CPU. Matchers only read it.
var knownSorted = sortKnown(knownPrimals)

// sortKnown lower-cases and trims names, drops empty and repeated ones and
// sorts them longest first (a new slice).
func sortKnown(names []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		n = strings.ToLower(strings.TrimSpace(n))
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// AddFamily records a family id seen elsewhere, so that names of unknown
// primals carrying it can be split too.
func (m *FamilyMatcher) AddFamily(f string) {
	if f == "" || f == "default" {
		return
	}
	for _, x := range m.families {
		if x == f {
			return
		}
	}
	m.families = append(m.families, f)
}

// Split returns the primal name and family id of a socket base name:
// "neural-api-westgate-tower-155f" → ("neural-api", "westgate-tower-155f");
// "beardog" → ("beardog", ""). A name that starts with a known name followed
// by a dash is split there (the longest known name wins). Otherwise, a name
// that ends with a dash and a family id already seen is split there (the
// longest family wins). Anything else is a name with no family.
func (m *FamilyMatcher) Split(base string) (name, family string) {
	if base == "" {
		return "", ""
	}
	lower := strings.ToLower(base)
	for _, k := range m.known {
		if lower == k {
			return base, ""
		}
		if strings.HasPrefix(lower, k+"-") && len(base) > len(k)+1 {
			return base[:len(k)], base[len(k)+1:]
		}
	}
	best := ""
	for _, f := range m.families {
		if len(f) > len(best) && strings.HasSuffix(base, "-"+f) && len(base) > len(f)+1 {
			best = f
		}
	}
	if best != "" {
		return base[:len(base)-len(best)-1], best
	}
	return base, ""
}

// Families returns the family ids the matcher knows, preferred first.
func (m *FamilyMatcher) Families() []string { return append([]string(nil), m.families...) }

// splitByIdentity splits a family-scoped socket name that the name alone
// could not split (an unknown primal, a family id not seen elsewhere) by
// what the peer says of itself: a target named "beta-west-tower-1" by its
// socket file, whose identity says "primal": "beta", is primal beta of
// family west-tower-1, and keeps the whole name as an alias. When the
// identity names a family too, the rest of the name must be that family.
// Names from other sources (registries, variables) are left as they are.
func splitByIdentity(t *Target) {
	if t.Family != "" || t.Probe == nil || t.Probe.Identity == nil {
		return
	}
	fromSocket := false
	for _, s := range t.Sources {
		if s.Source == SrcSocketDir && s.Name == t.Name {
			fromSocket = true
		}
	}
	p := cleanName(t.Probe.Identity.Primal)
	if !fromSocket || p == "" || len(t.Name) <= len(p)+1 || t.Name[len(p)] != '-' || !strings.EqualFold(t.Name[:len(p)], p) {
		return
	}
	fam := t.Name[len(p)+1:]
	if f := t.Probe.Identity.FamilyID; f != "" && f != "default" && f != fam {
		return
	}
	if !contains(t.Aliases, t.Name) {
		t.Aliases = append(t.Aliases, t.Name)
		sort.Strings(t.Aliases)
	}
	t.Name, t.Family = t.Name[:len(p)], fam
}
