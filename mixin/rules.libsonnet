// The project ships no recording rules.
{
  prometheusRules+:: {
    groups+: [],
  },
}
