// Package nexmark owns the Nexmark benchmark event generator: the three
// standard event kinds (person, auction, bid), their standard columns and
// SQL types, and a deterministic generator that produces any event directly
// from its global event number.
//
// The generator is pure. Every value of event n is a function of
// (Config.Seed, n) only: per-event randomness comes from a counter-based
// splitmix64 stream keyed on the seed and the event number, so events can be
// produced in any order, in parallel by independent callers, or re-produced
// after a restart, and always come out identical. The package starts no
// goroutines, never reads the clock and keeps no mutable global state (the
// only package-level data are immutable lookup tables built once).
//
// The standard Nexmark rules are followed (Apache Beam / Flink nexmark
// generator defaults):
//
//   - 50-event epochs of 1 person, 3 auctions and 46 bids: global event n is
//     a person when n%50 == 0, an auction when n%50 is 1..3, a bid otherwise.
//   - Person and auction ids start at 1000 and grow by one per event of that
//     kind; categories are 10..14.
//   - Sellers are "hot" (the first person of the latest batch of 100) with
//     probability 3/4, otherwise one of the 1000 most recent people. Bids go to
//     a hot auction (first of the latest batch of 100) with probability 1/2,
//     otherwise to one of the 100 most recent auctions; bidders are hot (second
//     of the latest batch of 100 people) with probability 3/4, otherwise one of
//     the 1000 most recent people. Unlike the reference generator, no id
//     "lead" is added: an event never references a person or auction that has
//     not been generated yet.
//   - Prices are round(10^(6u) * 100) for uniform u; reserve = initial_bid +
//     another price; expires = date_time + 1 + uniform(2 * horizon), where
//     horizon is the time until 100 more auctions have been generated.
//   - Bid channels are one of "Google", "Facebook", "Baidu", "Apple" with
//     probability 1/2, otherwise one of 10000 generated "channel-N" channels,
//     each with a fixed URL.
//   - The extra column pads each event to the standard average sizes:
//     person 200 bytes, auction 500, bid 100.
//   - Event time of event n is BaseTime + floor(n * interEventDelayUs / 1000)
//     with interEventDelayUs = 1e6 / EventsPerSecond, computed exactly in
//     integers so it never drifts.
//
// Random text (names, descriptions, padding) is taken as substrings of fixed
// pseudo-random pools, so filling a bid row performs no allocation.
package nexmark
