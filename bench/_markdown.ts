/**
 * Realistic Markdown for the benchmark workload: headings, paragraphs with
 * inline code and emphasis, lists, GFM tables, fenced code and relative links to
 * other Markdown files of the same bundle. Deterministic for a given PRNG.
 */
import path from "node:path";

/** A seeded PRNG returning floats in [0, 1). */
export type Random = () => number;

/** mulberry32: tiny, fast and good enough to shape a workload. */
export function seededRandom(seed: number): Random {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function randomInt(random: Random, min: number, max: number): number {
  return min + Math.floor(random() * (max - min + 1));
}

const WORDS = (
  "report revenue quarter region forecast pipeline release archive dataset metric " +
  "customer latency throughput budget summary appendix figure method sample result " +
  "baseline variance growth margin storage network cluster service request window " +
  "publish bundle manifest output catalog owner digest record update create delete " +
  "north south east west total average median annual weekly daily review draft final"
).split(" ");

function pick<T>(random: Random, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)] as T;
}

function words(random: Random, count: number): string {
  return Array.from({ length: count }, () => pick(random, WORDS)).join(" ");
}

function sentence(random: Random, link: () => string): string {
  const text = words(random, randomInt(random, 6, 16));
  const roll = random();
  const extra =
    roll < 0.15
      ? ` see ${link()}`
      : roll < 0.3
        ? ` with \`${pick(random, WORDS)}_${randomInt(random, 1, 99)}\``
        : roll < 0.4
          ? ` and **${words(random, 2)}**`
          : roll < 0.45
            ? ` ~~${words(random, 2)}~~ https://example.com/${pick(random, WORDS)}`
            : "";
  return `${text.charAt(0).toUpperCase()}${text.slice(1)}${extra}.`;
}

function table(random: Random): string {
  const columns = randomInt(random, 3, 5);
  const header = Array.from({ length: columns }, () => pick(random, WORDS));
  const rows = Array.from({ length: randomInt(random, 3, 8) }, () =>
    Array.from({ length: columns }, (_, i) =>
      i === 0 ? pick(random, WORDS) : (random() * 1000).toFixed(2),
    ),
  );
  const line = (cells: string[]) => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

function codeBlock(random: Random): string {
  const lines = Array.from(
    { length: randomInt(random, 3, 10) },
    () => `  ${pick(random, WORDS)}(${randomInt(random, 0, 999)}, "${pick(random, WORDS)}");`,
  );
  return ["```js", `function ${pick(random, WORDS)}() {`, ...lines, "}", "```"].join("\n");
}

function block(random: Random, link: () => string): string {
  const roll = random();
  if (roll < 0.15) return `## ${words(random, randomInt(random, 2, 5))}`;
  if (roll < 0.3) {
    const items = randomInt(random, 3, 7);
    return Array.from({ length: items }, () => `- ${sentence(random, link)}`).join("\n");
  }
  if (roll < 0.4) return table(random);
  if (roll < 0.5) return codeBlock(random);
  return Array.from({ length: randomInt(random, 2, 5) }, () => sentence(random, link)).join(" ");
}

/**
 * A Markdown document of about `size` bytes at `from`, linking to some of
 * `others` (bundle paths of other Markdown files) by relative path.
 */
export function markdownDocument(
  random: Random,
  options: { from: string; others: readonly string[]; size: number },
): string {
  const dir = path.posix.dirname(options.from);
  const link = () => {
    const target = pick(random, options.others);
    const fragment = random() < 0.3 ? `#${pick(random, WORDS)}` : "";
    return `[${words(random, 2)}](${path.posix.relative(dir, target)}${fragment})`;
  };
  const parts = [`# ${words(random, randomInt(random, 2, 6))}`];
  let length = parts[0]?.length ?? 0;
  while (length < options.size) {
    const next = block(random, link);
    parts.push(next);
    length += next.length + 2;
  }
  return `${parts.join("\n\n")}\n`;
}
