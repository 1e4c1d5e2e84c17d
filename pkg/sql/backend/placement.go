package backend

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/augustus-db/augustus/pkg/bft"
	"github.com/augustus-db/augustus/pkg/sql/catalog"
)

// Placement in DDL. GMS v0.20.0 drops MySQL's PARTITION BY clause before a
// backend sees it (gms-notes §8), so a table's placement reaches the backend
// in one of two ways, both turned into the same spec text:
//
//   - the statement runner (pkg/sql/engine) reads PARTITION BY from the
//     parsed statement and passes the spec in session.Flags.Placement;
//   - a table option anywhere in the table COMMENT:
//     COMMENT 'augustus:placement=<spec>'.
//
// Specs (groups are replica group ids; omitted, they are chosen
// round-robin):
//
//	group(1)                          the whole table in group 1
//	hash  hash(0,1)                   every key hashed over all (or the listed) groups
//	range(p0<100@1,p1<200,p2<MAXVALUE) parts of the first primary-key column
//
// SHOW CREATE TABLE prints the placement back in the comment, so a dump
// re-creates it.

const placementTag = "augustus:placement="

var placementRe = regexp.MustCompile(`augustus:placement=([a-z]+(?:\([^)]*\))?)`)

// PlacementSpec is a parsed placement spec; Groups entries of -1 are
// chosen at creation.
type PlacementSpec struct {
	Kind   string
	Groups []int
	Bounds []string
	Names  []string
}

// ParsePlacement parses a spec.
func ParsePlacement(s string) (*PlacementSpec, error) {
	s = strings.TrimSpace(s)
	kind, args, _ := strings.Cut(s, "(")
	kind = strings.ToLower(strings.TrimSpace(kind))
	hasArgs := strings.Contains(s, "(")
	if hasArgs {
		if !strings.HasSuffix(args, ")") {
			return nil, fmt.Errorf("placement %q: missing ')'", s)
		}
		args = strings.TrimSuffix(args, ")")
	}
	var parts []string
	if strings.TrimSpace(args) != "" {
		parts = strings.Split(args, ",")
	}
	sp := &PlacementSpec{Kind: kind}
	group := func(g string) (int, error) {
		n, err := strconv.Atoi(strings.TrimSpace(g))
		if err != nil || n < 0 {
			return 0, fmt.Errorf("placement %q: %q is not a group id", s, g)
		}
		return n, nil
	}
	switch kind {
	case catalog.PlaceGroup:
		if len(parts) != 1 {
			return nil, fmt.Errorf("placement %q: group(g) names one group", s)
		}
		g, err := group(parts[0])
		if err != nil {
			return nil, err
		}
		sp.Groups = []int{g}
	case catalog.PlaceHash, "key":
		sp.Kind = catalog.PlaceHash
		for _, p := range parts {
			g, err := group(p)
			if err != nil {
				return nil, err
			}
			sp.Groups = append(sp.Groups, g)
		}
	case catalog.PlaceRange:
		if len(parts) == 0 {
			return nil, fmt.Errorf("placement %q: range(...) needs parts", s)
		}
		for i, p := range parts {
			p = strings.TrimSpace(p)
			g := -1
			if at := strings.LastIndex(p, "@"); at >= 0 {
				n, err := group(p[at+1:])
				if err != nil {
					return nil, err
				}
				g, p = n, p[:at]
			}
			name, bound, ok := strings.Cut(p, "<")
			if !ok {
				return nil, fmt.Errorf("placement %q: part %q is not name<bound", s, p)
			}
			bound = strings.TrimSpace(bound)
			last := i == len(parts)-1
			if strings.EqualFold(bound, "MAXVALUE") != last {
				return nil, fmt.Errorf("placement %q: the last part, and only it, is < MAXVALUE", s)
			}
			sp.Names = append(sp.Names, strings.TrimSpace(name))
			sp.Groups = append(sp.Groups, g)
			if !last {
				sp.Bounds = append(sp.Bounds, strings.Trim(bound, "'\""))
			}
		}
	default:
		return nil, fmt.Errorf("placement %q: want group(g), hash, hash(g,...) or range(...)", s)
	}
	return sp, nil
}

// placementFromComment extracts a spec from a table comment, returning the
// comment without it.
func placementFromComment(comment string) (*PlacementSpec, string, error) {
	m := placementRe.FindStringSubmatchIndex(comment)
	if m == nil {
		if strings.Contains(comment, placementTag) {
			return nil, comment, fmt.Errorf("table comment: unreadable %s...", placementTag)
		}
		return nil, comment, nil
	}
	sp, err := ParsePlacement(comment[m[2]:m[3]])
	if err != nil {
		return nil, comment, err
	}
	rest := strings.TrimSpace(comment[:m[0]] + comment[m[1]:])
	return sp, rest, nil
}

// resolve turns a spec into the catalog's placement, choosing the groups it
// leaves open round-robin from next.
func (sp *PlacementSpec) resolve(groups []bft.GroupID, next func() bft.GroupID) (catalog.Placement, error) {
	known := map[int]bool{}
	for _, g := range groups {
		known[int(g)] = true
	}
	pick := func(g int) (bft.GroupID, error) {
		if g < 0 {
			return next(), nil
		}
		if !known[g] {
			return 0, fmt.Errorf("placement: the cluster has no group %d (groups %v)", g, groups)
		}
		return bft.GroupID(g), nil
	}
	pl := catalog.Placement{Kind: sp.Kind, Bounds: sp.Bounds, Names: sp.Names}
	switch sp.Kind {
	case catalog.PlaceHash:
		if len(sp.Groups) == 0 {
			pl.Groups = append(pl.Groups, groups...)
			return pl, nil
		}
	}
	for _, g := range sp.Groups {
		id, err := pick(g)
		if err != nil {
			return pl, err
		}
		pl.Groups = append(pl.Groups, id)
	}
	return pl, nil
}

// formatPlacement prints a placement as a spec.
func formatPlacement(p catalog.Placement) string {
	var b strings.Builder
	b.WriteString(p.Kind)
	b.WriteByte('(')
	for i, g := range p.Groups {
		if i > 0 {
			b.WriteByte(',')
		}
		if p.Kind == catalog.PlaceRange {
			name := fmt.Sprintf("p%d", i)
			if i < len(p.Names) && p.Names[i] != "" {
				name = p.Names[i]
			}
			bound := "MAXVALUE"
			if i < len(p.Bounds) {
				bound = p.Bounds[i]
			}
			fmt.Fprintf(&b, "%s<%s@", name, bound)
		}
		fmt.Fprintf(&b, "%d", g)
	}
	b.WriteByte(')')
	return b.String()
}

// withPlacement appends the placement table option to a comment.
func withPlacement(comment string, p catalog.Placement) string {
	spec := placementTag + formatPlacement(p)
	if comment == "" {
		return spec
	}
	return comment + " " + spec
}
