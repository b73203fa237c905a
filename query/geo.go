package query

import "math"

// Earth radii the original service uses to turn distances into radians.
const (
	earthRadiusMiles = 3959.0
	earthRadiusKm    = 6371.0
	// defaultNearMiles caps $nearSphere without a maximum distance, as the original
	// service documents; without it a "near" push would reach every located device.
	defaultNearMiles = 100.0
)

// geoPoint is in degrees.
type geoPoint struct{ lat, lng float64 }

// radiansBetween is the great-circle distance in radians (haversine).
func radiansBetween(lat1, lng1, lat2, lng2 float64) float64 {
	const d2r = math.Pi / 180
	p1, p2 := lat1*d2r, lat2*d2r
	dp := p2 - p1
	dl := (lng2 - lng1) * d2r
	s1, s2 := math.Sin(dp/2), math.Sin(dl/2)
	a := s1*s1 + math.Cos(p1)*math.Cos(p2)*s2*s2
	if a > 1 {
		a = 1
	}
	return 2 * math.Asin(math.Sqrt(a))
}

// nearPred is $nearSphere with a maximum distance, and $geoWithin $centerSphere.
type nearPred struct {
	center geoPoint
	max    float64 // radians
}

func (p *nearPred) in(lat, lng float64) bool {
	return radiansBetween(p.center.lat, p.center.lng, lat, lng) <= p.max
}

func (p *nearPred) test(v any, ok bool) bool { return geoTest(p, v, ok) }

// region is a geo predicate's area.
type region interface{ in(lat, lng float64) bool }

// geoTest is every geo predicate's test: the value, or any element of an array value, is a
// point inside r.
func geoTest(r region, v any, ok bool) bool {
	if !ok {
		return false
	}
	if lat, lng, isGeo := docGeo(v); isGeo {
		return r.in(lat, lng)
	}
	if a, isArr := v.([]any); isArr {
		for _, e := range a {
			if lat, lng, isGeo := docGeo(e); isGeo && r.in(lat, lng) {
				return true
			}
		}
	}
	return false
}

// boxPred is $within/$geoWithin $box: southwest and northeast corners, no date-line crossing.
type boxPred struct{ sw, ne geoPoint }

func (p *boxPred) in(lat, lng float64) bool {
	return lat >= p.sw.lat && lat <= p.ne.lat && lng >= p.sw.lng && lng <= p.ne.lng
}

func (p *boxPred) test(v any, ok bool) bool { return geoTest(p, v, ok) }

// polygonPred is $geoWithin $polygon, evaluated by ray casting in the (longitude, latitude)
// plane as the original's in-memory matcher does.
type polygonPred struct{ pts []geoPoint }

func (p *polygonPred) in(lat, lng float64) bool {
	inside := false
	n := len(p.pts)
	for i, j := 0, n-1; i < n; j, i = i, i+1 {
		a, b := p.pts[i], p.pts[j]
		if (a.lat > lat) != (b.lat > lat) &&
			lng < (b.lng-a.lng)*(lat-a.lat)/(b.lat-a.lat)+a.lng {
			inside = !inside
		}
	}
	return inside
}

func (p *polygonPred) test(v any, ok bool) bool { return geoTest(p, v, ok) }
