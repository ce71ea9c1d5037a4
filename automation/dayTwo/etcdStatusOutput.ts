// Parsers of talosctl's etcd upkeep tables: `etcd status` (per member: DB size, in use, leader, raft
// index, learner, errors) and `etcd alarm list` (NOSPACE, CORRUPT). talosctl (v1.13) prints them with
// a tabwriter (padding 3) under a header, sizes in go-humanize's SI units ("17 MB", "4.8 MB
// (29.00%)"), so the cells are read at the header's column positions (a size holds a space).
import type { EtcdAlarm, EtcdMemberStatus } from "./talosClient";

/** go-humanize's SI byte units (humanize.Bytes: powers of 1000). */
const UNITS: Readonly<Record<string, number>> = {
  B: 1,
  kB: 1e3,
  KB: 1e3,
  MB: 1e6,
  GB: 1e9,
  TB: 1e12,
  PB: 1e15,
};

/** `17 MB` → 17000000 bytes (approximate: humanize rounds to a few digits). */
export function parseHumanBytes(text: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*([kKMGTP]?B)$/.exec(text.trim());
  if (!match || UNITS[match[2]] === undefined)
    throw new Error(`not a size: ${JSON.stringify(text)}`);
  return Math.round(Number(match[1]) * UNITS[match[2]]);
}

/** Splits a tabwriter table into rows of cells keyed by the header's column names. */
export function parseTable(output: string): Record<string, string>[] {
  const lines = output.split("\n").filter((line) => line.trim() !== "");
  const headerIndex = lines.findIndex((line) => /^\s*(NODE|MEMBER)\s/.test(line));
  if (headerIndex < 0) return [];
  const header = lines[headerIndex];
  // Column names are separated by at least two spaces ("DB SIZE" holds one).
  const columns: { name: string; start: number }[] = [];
  for (const match of header.matchAll(/\S+(?: \S+)*/g)) {
    columns.push({ name: match[0], start: match.index });
  }
  return lines.slice(headerIndex + 1).map((line) => {
    const row: Record<string, string> = {};
    columns.forEach((column, i) => {
      const end = i + 1 < columns.length ? columns[i + 1].start : undefined;
      row[column.name] = line.slice(column.start, end).trim();
    });
    return row;
  });
}

/** `talosctl etcd status` of one node: its member's status. */
export function parseEtcdStatus(output: string): EtcdMemberStatus {
  const rows = parseTable(output);
  const row = rows[0];
  if (!row || !row.MEMBER || !row["DB SIZE"]) {
    throw new Error(
      `talosctl etcd status printed no member: ${JSON.stringify(output.slice(0, 200))}`,
    );
  }
  const inUse = /^(.+?)\s*\(([\d.]+)%\)$/.exec(row["IN USE"] ?? "");
  if (!inUse) throw new Error(`talosctl etcd status: no IN USE in ${JSON.stringify(row)}`);
  const dbSizeBytes = parseHumanBytes(row["DB SIZE"]);
  return {
    memberId: row.MEMBER,
    dbSizeBytes,
    inUseBytes: parseHumanBytes(inUse[1]),
    inUseRatio: Number(inUse[2]) / 100,
    leaderId: row.LEADER ?? "",
    raftIndex: Number(row["RAFT INDEX"] ?? 0),
    learner: row.LEARNER === "true",
    errors: row.ERRORS ? row.ERRORS.split(/,\s*/).filter((e) => e !== "") : [],
  };
}

/** `talosctl etcd alarm list`: every active alarm (none: an empty list). */
export function parseEtcdAlarms(output: string): EtcdAlarm[] {
  return parseTable(output)
    .filter((row) => row.ALARM && row.ALARM !== "NONE")
    .map((row) => ({ memberId: row.MEMBER ?? "", alarm: row.ALARM }));
}
