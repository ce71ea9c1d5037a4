// The Markdown preview summary for pull requests: per layer and environment, the counts of creates,
// updates, replaces and deletes and a table of the changed resources, with replacements and
// deletions of critical resources called out in bold at the top. Several previews merge into one
// file (staging, then prod: one PR comment); the sections travel as JSON in a hidden HTML comment so a rerun
// replaces its own section instead of duplicating it.
import { z } from "zod";
import type { EngineEvent, StepEventMetadata } from "@pulumi/pulumi/automation";
import * as fs from "node:fs";
import { criticalReason } from "./critical";
import { isDefaultProviderStep, opWords, parseUrn, plainMessage } from "./engineEvents";
import { UserError } from "./errors";
import { writeFileAtomically } from "./files";
import { LAYER_NAMES } from "./layers";

/** The first line of every summary; the CI workflow finds its previous PR comment by it. */
export const SUMMARY_MARKER = "<!-- talos-platform:preview-summary -->";
const DATA_PREFIX = "<!-- talos-platform:preview-data:";
const DATA_SUFFIX = " -->";

/** The kinds of change a summary counts. */
const COUNTED_KINDS = ["create", "update", "replace", "delete"] as const;

/** One of {@link COUNTED_KINDS}. */
type CountedKind = (typeof COUNTED_KINDS)[number];

/** One changed resource. */
interface ResourceChange {
  readonly kind: CountedKind;
  readonly type: string;
  readonly name: string;
  /** Properties that differ (for a replace: those forcing it), without values. */
  readonly properties: readonly string[];
  /** Why this resource is critical, when it is. */
  readonly critical?: string;
}

/** A replacement or deletion to call out. */
interface CriticalChange {
  readonly kind: "replace" | "delete";
  readonly type: string;
  readonly name: string;
  readonly reason: string;
}

/** The preview of one layer and environment. */
interface PreviewSection {
  readonly layer: string;
  readonly env: string;
  readonly status: "ok" | "failed" | "skipped";
  readonly counts: Readonly<Record<CountedKind, number>>;
  readonly changes: readonly ResourceChange[];
  readonly critical: readonly CriticalChange[];
  /** The errors of a failed preview, or why it was skipped. */
  readonly messages: readonly string[];
  /** Caveats a reader must know, e.g. a preview against an empty state. */
  readonly notes?: readonly string[];
  /**
   * What `up` would disrupt on the running cluster, in order (automation/dayTwo/disruption.ts);
   * empty when no running node is; absent for a layer or stack without one.
   */
  readonly disruption?: readonly string[];
}

/**
 * The shape of the sections in a summary's data block. The block comes back from a pull-request
 * comment (the seed of the next preview), so it is checked before anything of it is rendered: a
 * hand-edited or forged block is refused, never rendered as whatever it holds.
 */
const text = z.string().max(10_000);
const sectionsSchema = z
  .array(
    z.strictObject({
      layer: z.string().regex(/^[a-z][a-z0-9-]{0,31}$/),
      env: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/),
      status: z.enum(["ok", "failed", "skipped"]),
      counts: z.strictObject(
        Object.fromEntries(COUNTED_KINDS.map((kind) => [kind, z.int().min(0)])) as Record<
          CountedKind,
          z.ZodInt
        >,
      ),
      changes: z
        .array(
          z.strictObject({
            kind: z.enum(COUNTED_KINDS),
            type: text,
            name: text,
            properties: z.array(text).max(1_000),
            critical: text.optional(),
          }),
        )
        .max(10_000),
      critical: z
        .array(
          z.strictObject({
            kind: z.enum(["replace", "delete"]),
            type: text,
            name: text,
            reason: text,
          }),
        )
        .max(1_000),
      messages: z.array(text).max(1_000),
      notes: z.array(text).max(1_000).optional(),
      disruption: z.array(text).max(1_000).optional(),
    }),
  )
  .max(64);

const KIND_PRIORITY: Record<CountedKind, number> = { replace: 4, delete: 3, create: 2, update: 1 };

/** Rows of a section's table; more are counted, not listed. */
const MAX_ROWS = 100;

interface CriticalEntry {
  readonly kind: "replace" | "delete";
  readonly type: string;
  readonly name: string;
  readonly reasons: Set<string>;
  refused: boolean;
}

/** Builds a section from the events of one preview. */
export function previewSection(input: {
  readonly layer: string;
  readonly env: string;
  readonly events: readonly EngineEvent[];
  readonly ok: boolean;
  /** Errors to show when the preview failed (the event stream's, or the translated CLI error). */
  readonly errors?: readonly string[];
  readonly notes?: readonly string[];
  readonly disruption?: readonly string[];
}): PreviewSection {
  const byUrn = new Map<string, ResourceChange>();
  const critical = new Map<string, CriticalEntry>();
  const criticalEntry = (kind: "replace" | "delete", urn: string): CriticalEntry => {
    const key = `${kind} ${urn}`;
    let entry = critical.get(key);
    if (!entry) {
      const { type, name } = parseUrn(urn);
      entry = { kind, type, name, reasons: new Set(), refused: false };
      critical.set(key, entry);
    }
    return entry;
  };
  for (const event of input.events) {
    const metadata = event.resourcePreEvent?.metadata;
    // Default providers are the engine's internal steps: Pulumi's own counts leave them out.
    if (metadata && !isDefaultProviderStep(metadata)) {
      const change = changeOf(metadata);
      if (!change) continue;
      const previous = byUrn.get(metadata.urn);
      if (!previous || KIND_PRIORITY[change.kind] > KIND_PRIORITY[previous.kind]) {
        byUrn.set(metadata.urn, {
          ...change,
          properties: mergeProperties(previous?.properties, change.properties),
          ...((change.critical ?? previous?.critical)
            ? { critical: change.critical ?? previous?.critical }
            : {}),
        });
      }
      if ((change.kind === "replace" || change.kind === "delete") && change.critical) {
        criticalEntry(change.kind, metadata.urn).reasons.add(change.critical);
      }
    }
    const refusal = event.diagnosticEvent && protectionRefusal(event.diagnosticEvent.message);
    if (refusal) criticalEntry(refusal.kind, refusal.urn).refused = true;
  }
  const changes = [...byUrn.values()]
    .filter((c) => !c.type.startsWith("pulumi:pulumi:"))
    .sort((a, b) => KIND_PRIORITY[b.kind] - KIND_PRIORITY[a.kind] || a.name.localeCompare(b.name));
  const counts = { create: 0, update: 0, replace: 0, delete: 0 };
  for (const change of changes) counts[change.kind]++;
  return {
    layer: input.layer,
    env: input.env,
    status: input.ok ? "ok" : "failed",
    counts,
    // The table shows at most MAX_ROWS; the counts keep the totals.
    changes: changes.slice(0, MAX_ROWS),
    critical: [...critical.values()].map(({ kind, type, name, reasons, refused }) => ({
      kind,
      type,
      name,
      reason: [
        ...(refused && reasons.size === 0 ? ["protected"] : []),
        ...reasons,
        ...(refused ? [`the engine refuses to ${kind} it, so the preview fails`] : []),
      ].join("; "),
    })),
    messages: input.ok ? [] : [...(input.errors ?? [])],
    ...(input.notes && input.notes.length > 0 ? { notes: [...input.notes] } : {}),
    ...(input.disruption ? { disruption: [...input.disruption] } : {}),
  };
}

/** A section for a layer that was not previewed, with the reason. */
export function skippedSection(layer: string, env: string, reason: string): PreviewSection {
  return {
    layer,
    env,
    status: "skipped",
    counts: { create: 0, update: 0, replace: 0, delete: 0 },
    changes: [],
    critical: [],
    messages: [reason],
  };
}

function changeOf(metadata: StepEventMetadata): ResourceChange | undefined {
  const kind = opWords(metadata.op).kind;
  if (kind !== "create" && kind !== "update" && kind !== "replace" && kind !== "delete") {
    return undefined;
  }
  const properties =
    kind === "replace" && metadata.keys && metadata.keys.length > 0
      ? metadata.keys
      : (metadata.diffs ?? Object.keys(metadata.detailedDiff ?? {}));
  const reason = criticalReason(metadata);
  return {
    kind,
    type: metadata.type,
    name: parseUrn(metadata.urn).name,
    properties: [...new Set(properties)].sort(),
    ...(reason ? { critical: reason } : {}),
  };
}

function mergeProperties(
  a: readonly string[] | undefined,
  b: readonly string[],
): readonly string[] {
  return [...new Set([...(a ?? []), ...b])].sort();
}

/**
 * The engine refusing to touch a protected resource, and which one. Its messages (quoting URNs with
 * Go's %q):
 * - `resource "<urn>" cannot be deleted\nbecause it is protected. …` (deleteProtectedError,
 *   pkg/resource/deploy/step.go);
 * - `unable to replace resource "<urn>"\nas it is currently marked for protection. …`
 *   (pkg/resource/deploy/step_generator.go);
 * - `unable to replace resource "<dependent>" as part of replacing "<urn>" as it is currently marked
 *   for protection. …`: the diagnostic's own URN is the replaced resource, the protected one is the
 *   dependent named first.
 */
export function protectionRefusal(
  message: string,
): { kind: "replace" | "delete"; urn: string } | undefined {
  const text = plainMessage(message);
  const deleted = /^resource "(urn:pulumi:[^"]+)" cannot be deleted\s+because it is protected/.exec(
    text,
  );
  if (deleted) return { kind: "delete", urn: deleted[1] };
  const replaced =
    /^unable to replace resource "(urn:pulumi:[^"]+)"[\s\S]*marked for protection/.exec(text);
  return replaced ? { kind: "replace", urn: replaced[1] } : undefined;
}

/** Adds or replaces the section of the same layer and environment, keeping layers in order. */
export function mergeSections(
  existing: readonly PreviewSection[],
  section: PreviewSection,
): PreviewSection[] {
  const index = existing.findIndex((s) => s.layer === section.layer && s.env === section.env);
  const merged =
    index >= 0 ? existing.map((s, i) => (i === index ? section : s)) : [...existing, section];
  const rank = (layer: string) => {
    const i = (LAYER_NAMES as readonly string[]).indexOf(layer);
    return i < 0 ? LAYER_NAMES.length : i;
  };
  // Array.prototype.sort is stable: environments keep the order they were previewed in.
  return merged.sort((a, b) => rank(a.layer) - rank(b.layer));
}

/** The sections stored in a summary file's hidden data block. */
export function readSections(markdown: string): PreviewSection[] {
  const start = markdown.lastIndexOf(DATA_PREFIX);
  if (start < 0) return [];
  const end = markdown.indexOf(DATA_SUFFIX, start + DATA_PREFIX.length);
  const encoded = markdown.slice(start + DATA_PREFIX.length, end < 0 ? undefined : end).trim();
  const parsed = sectionsSchema.safeParse(JSON.parse(encoded));
  if (!parsed.success) {
    const [issue] = parsed.error.issues;
    throw new Error(
      `not a list of preview sections (at ${issue.path.join(".") || "top"}: ${issue.message})`,
    );
  }
  return parsed.data;
}

/**
 * The sections as JSON inside an HTML comment: `>` is escaped (JSON has it only inside strings),
 * so no resource name can end the comment.
 */
function encodeData(sections: readonly PreviewSection[]): string {
  return JSON.stringify(sections).replace(/>/g, "\\u003e");
}

/**
 * The sections already in a summary file (none when it is missing or empty). Refuses a file that is
 * not a preview summary, so an unrelated file is never overwritten.
 */
export function readSummaryFile(file: string): PreviewSection[] {
  if (!fs.existsSync(file)) return [];
  const text = fs.readFileSync(file, "utf8");
  if (text.trim() === "") return [];
  if (!text.startsWith(SUMMARY_MARKER)) {
    throw new UserError({
      what: "--summary",
      problem: "the file exists and is not a preview summary, so it is left alone",
      got: JSON.stringify(file),
      fix: "Name a new file, or delete this one",
    });
  }
  try {
    return readSections(text);
  } catch (error) {
    throw new UserError({
      what: "--summary",
      problem: "the summary's data block cannot be read, so the file is left alone",
      got: JSON.stringify((error as Error).message),
      fix: "Delete the file and run the previews again",
    });
  }
}

/** Merges one section into the summary file (created if missing) and rewrites it. */
export function writeSummarySection(file: string, section: PreviewSection): PreviewSection[] {
  const sections = mergeSections(readSummaryFile(file), section);
  writeFileAtomically(file, renderSummary(sections));
  return sections;
}

/** Longest body GitHub accepts for a comment is 65536 characters; stay clear of it. */
const MAX_MARKDOWN = 60_000;

/** The Markdown of a summary. */
export function renderSummary(sections: readonly PreviewSection[]): string {
  const full = render(sections, true);
  return full.length <= MAX_MARKDOWN ? full : render(sections, false);
}

function render(sections: readonly PreviewSection[], withTables: boolean): string {
  const out: string[] = [SUMMARY_MARKER, "## Infrastructure preview", ""];
  const critical = sections.flatMap((s) =>
    s.critical.map((c) => ({ ...c, target: `${s.layer}/${s.env}` })),
  );
  if (critical.length > 0) {
    out.push("> [!CAUTION]");
    for (const c of critical) {
      out.push(
        `> **${c.target}: ${c.kind === "replace" ? "replaces" : "deletes"} ${code(c.type)} ${code(c.name)}: ${escapeText(c.reason)}**  `,
      );
    }
    out.push("");
  }
  out.push("| layer | environment | create | update | replace | delete | result |");
  out.push("| --- | --- | ---: | ---: | ---: | ---: | --- |");
  for (const s of sections) {
    out.push(
      `| ${s.layer} | ${cell(s.env)} | ${s.counts.create} | ${s.counts.update} | ${s.counts.replace} | ${s.counts.delete} | ${resultOf(s)} |`,
    );
  }
  for (const s of sections) {
    out.push("", `### ${s.layer} / ${escapeText(s.env)}`, "");
    if (s.status === "skipped") {
      out.push(`Skipped: ${escapeText(s.messages.join(" "))}`);
      continue;
    }
    for (const note of s.notes ?? []) out.push(`**Note:** ${escapeText(note)}`, "");
    if (s.disruption) out.push(...disruptionLines(s.disruption), "");
    if (s.status === "failed") {
      out.push(
        "**The preview failed:**",
        "",
        fenced(s.messages.join("\n\n") || "(no message)"),
        "",
      );
    }
    if (COUNTED_KINDS.every((kind) => s.counts[kind] === 0)) {
      if (s.status === "ok") out.push("No changes.");
      continue;
    }
    const total = COUNTED_KINDS.reduce((sum, kind) => sum + s.counts[kind], 0);
    if (!withTables) {
      out.push(`${total} changed resources (table left out to fit a comment).`);
      continue;
    }
    out.push("| change | resource | type | properties |", "| --- | --- | --- | --- |");
    for (const c of s.changes) {
      const kind =
        c.critical && (c.kind === "replace" || c.kind === "delete") ? `**${c.kind}**` : c.kind;
      out.push(
        `| ${kind} | ${code(c.name)} | ${code(c.type)} | ${c.properties.map(code).join(", ")} |`,
      );
    }
    if (total > s.changes.length) out.push("", `… and ${total - s.changes.length} more.`);
  }
  // Without its tables the summary does not need the rows either; the counts remain.
  const stored = withTables ? sections : sections.map((s) => ({ ...s, changes: [] }));
  out.push("", `${DATA_PREFIX}${encodeData(stored)}${DATA_SUFFIX}`, "");
  return out.join("\n");
}

/** What `up` would disrupt, as a numbered list (or the one line saying it disrupts nothing). */
function disruptionLines(steps: readonly string[]): string[] {
  if (steps.length === 0) {
    return [
      "**Disruption:** none; no running node is rebooted, upgraded, replaced or changes etcd membership.",
    ];
  }
  return [
    "**Disruption: what `up` does to the running cluster, in order**",
    "",
    ...steps.map((step, i) => `${i + 1}. ${escapeText(step)}`),
  ];
}

function resultOf(section: PreviewSection): string {
  if (section.status === "failed") return "**failed**";
  if (section.status === "skipped") return "skipped";
  const critical = section.critical.length;
  if (critical > 0) return `**${critical} critical**`;
  return COUNTED_KINDS.some((k) => section.counts[k] > 0) ? "changes" : "no changes";
}

/** Inline code that survives backticks and table pipes in the text. */
function code(text: string): string {
  const longest = Math.max(0, ...(text.match(/`+/g) ?? []).map((run) => run.length));
  const fence = "`".repeat(longest + 1);
  const padded = text.startsWith("`") || text.endsWith("`") ? ` ${text} ` : text;
  return `${fence}${cell(padded)}${fence}`;
}

function cell(text: string): string {
  return text.replace(/\|/g, "\\|").replace(/\r?\n/g, " ");
}

function escapeText(text: string): string {
  return cell(text).replace(/([*_<>[\]])/g, "\\$1");
}

function fenced(text: string): string {
  const longest = Math.max(2, ...(text.match(/`+/g) ?? []).map((run) => run.length));
  const fence = "`".repeat(longest + 1);
  return `${fence}text\n${text}\n${fence}`;
}
