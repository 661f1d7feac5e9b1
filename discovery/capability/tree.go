package capability

import (
	"encoding/json"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Domain is one branch of the capability tree: every method whose name
// starts with Name and a dot (or, for an undotted method, equals Name).
type Domain struct {
	Name string `json:"name"`
	// Description and Version come from the provided_capabilities group of
	// the same type, if any (the first such group).
	Description string `json:"description,omitempty"`
	Version     string `json:"version,omitempty"`
	// Cost is the domain-level cost estimate, if any.
	Cost    *Cost    `json:"cost,omitempty"`
	Methods []Method `json:"methods"`
}

// Method is one leaf of the capability tree.
type Method struct {
	// Name is the full method name ("dag.session.create").
	Name string `json:"name"`
	// Short is Name without its domain ("session.create"); for an undotted
	// method it is the name itself.
	Short string `json:"short"`
	// Cost is the method's cost estimate, else its domain's.
	Cost *Cost `json:"cost,omitempty"`
	// Prerequisites are the methods operation_dependencies says run first.
	Prerequisites []string `json:"prerequisites,omitempty"`
	// Group, GroupDescription and GroupVersion describe the
	// provided_capabilities group that lists this method, if any.
	Group            string `json:"group,omitempty"`
	GroupDescription string `json:"group_description,omitempty"`
	GroupVersion     string `json:"group_version,omitempty"`
	// Description and Params come from format C method_info, if given.
	Description string          `json:"description,omitempty"`
	Params      json.RawMessage `json:"params,omitempty"`
}

// SplitMethod splits a method name at its first dot into domain and the rest.
// An undotted name is its own domain and short name.
func SplitMethod(name string) (domain, short string) {
	if i := strings.IndexByte(name, '.'); i >= 0 {
		return name[:i], name[i+1:]
	}
	return name, name
}

// Tree arranges Methods by domain, each method with its cost, prerequisites
// and group metadata. Domains and methods are sorted by name. Consumed
// capabilities are not part of the tree; they are in c.Consumed.
func (c *Capabilities) Tree() []Domain {
	if c == nil {
		return nil
	}
	set := make(map[string]bool, len(c.Methods))
	for _, m := range c.Methods {
		set[m] = true
	}
	// Which group lists each method: prefer type.m, then m as sent.
	groupOf := make(map[string]int)
	groupByType := make(map[string]int)
	for gi, g := range c.Provided {
		if _, ok := groupByType[g.Type]; !ok {
			groupByType[g.Type] = gi
		}
		for _, m := range g.Methods {
			full := qualify(g.Type, m)
			if !set[full] && set[m] {
				full = m
			}
			if _, ok := groupOf[full]; !ok {
				groupOf[full] = gi
			}
		}
	}
	byDomain := make(map[string][]Method)
	for _, name := range c.Methods {
		dom, short := SplitMethod(name)
		m := Method{Name: name, Short: short}
		if cost, ok := c.CostEstimates[name]; ok {
			m.Cost = &cost
		} else if cost, ok := c.CostEstimates[dom]; ok {
			m.Cost = &cost
		}
		if pre := c.OperationDependencies[name]; len(pre) > 0 {
			m.Prerequisites = append([]string(nil), pre...)
		}
		if gi, ok := groupOf[name]; ok {
			g := c.Provided[gi]
			m.Group, m.GroupDescription, m.GroupVersion = g.Type, g.Description, g.Version
		}
		if mi, ok := c.MethodInfo[name]; ok {
			m.Description, m.Params = mi.Description, mi.Params
		}
		byDomain[dom] = append(byDomain[dom], m)
	}
	out := make([]Domain, 0, len(byDomain))
	for _, dom := range slices.Sorted(maps.Keys(byDomain)) {
		d := Domain{Name: dom, Methods: byDomain[dom]}
		sort.Slice(d.Methods, func(i, j int) bool { return d.Methods[i].Name < d.Methods[j].Name })
		if gi, ok := groupByType[dom]; ok {
			d.Description, d.Version = c.Provided[gi].Description, c.Provided[gi].Version
		}
		if cost, ok := c.CostEstimates[dom]; ok {
			d.Cost = &cost
		}
		out = append(out, d)
	}
	return out
}
