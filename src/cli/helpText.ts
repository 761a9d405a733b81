/**
 * Help texts with aligned columns: in each section (the lines after a `Options:`-like
 * heading, up to the next heading), every entry's description starts at the same column,
 * two spaces after the widest entry, and its continuation lines start there too. Help
 * fragments are shared between commands (`--config`, `--output`, the admin options), so
 * the alignment is computed here rather than kept by hand.
 */
const ENTRY = /^ {2}(\S(?:\S| (?! ))*) {2,}(\S.*)$/;
const CONTINUATION = /^ {3,}(\S.*)$/;
const HEADING = /^\S.*:$/;

export function alignHelp(text: string): string {
  const lines = text.split('\n');
  const out: string[] = [];
  let section: { name: string; description: string[] }[] = [];
  const flush = () => {
    const width = Math.max(0, ...section.map((e) => e.name.length));
    for (const entry of section) {
      const [first, ...rest] = entry.description;
      out.push(`  ${entry.name.padEnd(width)}  ${first}`);
      for (const more of rest) out.push(`${' '.repeat(width + 4)}${more}`);
    }
    section = [];
  };
  let inSection = false;
  for (const line of lines) {
    const entry = inSection ? ENTRY.exec(line) : null;
    const continuation = section.length > 0 ? CONTINUATION.exec(line) : null;
    if (entry) {
      section.push({ name: entry[1] as string, description: [entry[2] as string] });
      continue;
    }
    if (continuation && !ENTRY.test(line)) {
      section[section.length - 1]?.description.push(continuation[1] as string);
      continue;
    }
    flush();
    if (HEADING.test(line)) inSection = true;
    else if (line === '' || !line.startsWith(' ')) inSection = HEADING.test(line);
    out.push(line);
  }
  flush();
  return out.join('\n');
}
