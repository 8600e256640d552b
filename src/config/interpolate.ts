/**
 * `${NAME}` environment interpolation in configuration string values (SPEC §3).
 * Runs on the parsed YAML before the schema, so every key may use it; keys
 * themselves are never interpolated.
 */
import { type ConfigProblem, formatKeyPath, type KeyPath } from "./issues.js";

// `$${` is an escaped literal `${`; a `${` not followed by `NAME}` is malformed.
const TOKEN = /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$\{/g;

const MALFORMED =
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the message shows the syntax itself
  'malformed "${": write ${NAME} to read an environment variable, or $${ for a literal "${"';

export interface InterpolationResult {
  value: unknown;
  problems: ConfigProblem[];
}

/**
 * Replace `${NAME}` in every string of `value` (recursively through lists and
 * mappings) with `env[NAME]`. An unset variable or a malformed `${` is a problem
 * at that key path; the string is then left as written. `$${` yields a literal
 * `${`. Substituted text is not scanned again. Returns a new value; the input is
 * not modified.
 */
export function interpolateEnv(value: unknown, env: NodeJS.ProcessEnv): InterpolationResult {
  const problems: ConfigProblem[] = [];
  const walk = (node: unknown, path: KeyPath): unknown => {
    if (typeof node === "string") return _interpolateString(node, { env, path, problems });
    if (Array.isArray(node)) return node.map((item, index) => walk(item, [...path, index]));
    if (node !== null && typeof node === "object") {
      const out: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(node)) {
        // defineProperty keeps a "__proto__" key an ordinary (and then unknown) key.
        Object.defineProperty(out, key, {
          value: walk(item, [...path, key]),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      return out;
    }
    return node;
  };
  return { value: walk(value, []), problems };
}

interface StringContext {
  env: NodeJS.ProcessEnv;
  path: KeyPath;
  problems: ConfigProblem[];
}

function _interpolateString(text: string, context: StringContext): string {
  // One problem per string, naming all that is wrong in it: the caller keeps
  // one problem per key path, and a fix of the first alone would only bring
  // up the next.
  const found: string[] = [];
  const result = text.replace(TOKEN, (match, name: string | undefined) => {
    if (match === "$${") return "${";
    if (name === undefined) {
      if (!found.includes(MALFORMED)) found.push(MALFORMED);
      return match;
    }
    const replacement = context.env[name];
    if (replacement === undefined) {
      const message = `environment variable ${name} is not set (used as \${${name}})`;
      if (!found.includes(message)) found.push(message);
      return match;
    }
    return replacement;
  });
  if (found.length > 0) {
    context.problems.push({ path: formatKeyPath(context.path), message: found.join("; ") });
  }
  return result;
}
