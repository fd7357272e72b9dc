// Package docs holds the tests that keep the repository's Markdown true:
// README.md stays a map (short, linking one docs/ page per topic), every
// relative link of README.md, docs/ and the other Markdown pages reaches a
// file and, into Markdown, a heading, and the code map of
// docs/development.md names every folder that holds Go code, and only
// folders that exist.
package docs
