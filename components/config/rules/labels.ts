// Node labels and taints in Kubernetes' syntax, as Talos checks them before it applies a machine
// config (pkg/machinery/labels in Talos). checkLabels and checkTaints serve the patches rule too.
import type { KeyPath, Problems } from "../problems";
import type { Rule } from "./rule";

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
/** The taint effects Kubernetes knows. */
const TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"] as const;

/** Why `key` is not a valid label (or taint) key, or undefined when it is. */
function labelKeyProblem(key: string): string | undefined {
  const parts = key.split("/");
  if (parts.length > 2) return "has more than one /";
  const [prefix, name] = parts.length === 2 ? parts : [undefined, parts[0]];
  if (prefix !== undefined) {
    if (prefix.length === 0) return "has an empty prefix before /";
    if (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix))
      return `has a prefix that is not a lowercase DNS subdomain (${prefix})`;
  }
  if (name.length === 0) return "has an empty name";
  if (name.length > 63) return "has a name longer than 63 characters";
  if (!QUALIFIED_NAME.test(name))
    return "has a name that is not letters, digits, '-', '_' or '.' starting and ending with a letter or digit";
  return undefined;
}

/** Why `value` is not a valid label value, or undefined when it is (the empty value is valid). */
function labelValueProblem(value: string): string | undefined {
  if (value.length > 63) return "is longer than 63 characters";
  if (value !== "" && !QUALIFIED_NAME.test(value))
    return "must be letters, digits, '-', '_' or '.' starting and ending with a letter or digit";
  return undefined;
}

/** Why a Talos taint value (`value:Effect` or `Effect`) is invalid, or undefined when it is valid. */
function taintValueProblem(value: string): string | undefined {
  const colon = value.indexOf(":");
  const [label, effect] =
    colon < 0 ? [undefined, value] : [value.slice(0, colon), value.slice(colon + 1)];
  if (!(TAINT_EFFECTS as readonly string[]).includes(effect))
    return `needs an effect (${TAINT_EFFECTS.join(", ")}), written value:Effect or Effect`;
  const valueProblem = label === undefined ? undefined : labelValueProblem(label);
  return valueProblem && `has a value that ${valueProblem}`;
}

/**
 * Records every label key or value of `labels` that Kubernetes would refuse, at `path` (the labels
 * themselves, or the patch that sets them); `where` and `place` name the document and key of a patch.
 */
export function checkLabels(
  path: KeyPath,
  labels: Readonly<Record<string, unknown>>,
  problems: Problems,
  where = "",
  place = "",
): void {
  for (const [key, value] of Object.entries(labels)) {
    const keyProblem = labelKeyProblem(key);
    if (keyProblem) {
      problems.add(path, `${where}label key ${JSON.stringify(key)}${place} ${keyProblem}`, {
        hint: "Label keys are [prefix/]name, e.g. topology.kubernetes.io/zone",
      });
    }
    const valueProblem = typeof value === "string" ? labelValueProblem(value) : undefined;
    if (valueProblem) {
      problems.add(
        path,
        `${where}the value of label ${JSON.stringify(key)}${place} ${valueProblem}`,
        {
          got: value,
        },
      );
    }
  }
}

/** Records every taint of `taints` (Talos' `key: value:Effect` mapping) that Kubernetes would refuse. */
export function checkTaints(
  path: KeyPath,
  taints: Readonly<Record<string, unknown>>,
  problems: Problems,
  where = "",
  place = "",
): void {
  for (const [key, value] of Object.entries(taints)) {
    const keyProblem = labelKeyProblem(key);
    if (keyProblem) {
      problems.add(path, `${where}taint key ${JSON.stringify(key)}${place} ${keyProblem}`);
      continue;
    }
    const valueProblem = typeof value === "string" ? taintValueProblem(value) : undefined;
    if (valueProblem) {
      problems.add(path, `${where}taint ${JSON.stringify(key)}${place} ${valueProblem}`, {
        got: value,
        hint: "For example dedicated: ingress:NoSchedule",
      });
    }
  }
}

/** Node labels in the stack file follow Kubernetes' syntax. */
export const nodeLabels: Rule = ({ nodes }, problems) => {
  for (const { index, node } of nodes) {
    if (node.labels) checkLabels(["nodes", index, "labels"], node.labels, problems);
  }
};
