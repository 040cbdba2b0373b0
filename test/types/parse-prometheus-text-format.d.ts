/**
 * Types of `parse-prometheus-text-format` 1.1.1 (the package ships none): it parses the Prometheus
 * text format into prom2json's shape. Source: the package's README.
 */
declare module "parse-prometheus-text-format" {
  /** One sample (counter, gauge, untyped) or one labelled histogram/summary. Values are strings, as in the text. */
  export interface PrometheusSample {
    labels?: Record<string, string>;
    value?: string;
    /** Histograms: cumulative count by upper bound (`"0.5"`, `"+Inf"`). */
    buckets?: Record<string, string>;
    count?: string;
    sum?: string;
  }
  /** One metric family. */
  export interface PrometheusFamily {
    name: string;
    help: string;
    type: "COUNTER" | "GAUGE" | "HISTOGRAM" | "SUMMARY" | "UNTYPED";
    metrics: PrometheusSample[];
  }
  /** Parses `text`; throws on malformed input. */
  export default function parsePrometheusTextFormat(text: string): PrometheusFamily[];
}
