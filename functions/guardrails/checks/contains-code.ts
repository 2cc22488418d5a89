import { z } from '../../shared/validation';
import { defineCheck } from './types';

/**
 * `default.containsCode`: passes when the text holds a fenced code block (```lang) in
 * `format`. The fence's language tag decides; an untagged block is classified by a
 * keyword heuristic (SQL, Python, TypeScript, JavaScript, Java, C#, Go, Rust, PHP, Ruby,
 * Shell, HTML, CSS, C, C++), first match wins.
 */
export const CODE_FORMATS = [
  'SQL',
  'Python',
  'TypeScript',
  'JavaScript',
  'Java',
  'C',
  'C++',
  'C#',
  'Go',
  'Rust',
  'Ruby',
  'PHP',
  'Swift',
  'Kotlin',
  'Scala',
  'R',
  'Shell',
  'PowerShell',
  'HTML',
  'CSS',
  'JSON',
  'YAML',
  'XML',
  'Markdown',
] as const;
export type CodeFormat = (typeof CODE_FORMATS)[number];

const TAGS: Record<string, CodeFormat> = {
  sql: 'SQL',
  mysql: 'SQL',
  postgresql: 'SQL',
  postgres: 'SQL',
  plsql: 'SQL',
  tsql: 'SQL',
  sqlite: 'SQL',
  python: 'Python',
  py: 'Python',
  python3: 'Python',
  typescript: 'TypeScript',
  ts: 'TypeScript',
  tsx: 'TypeScript',
  javascript: 'JavaScript',
  js: 'JavaScript',
  jsx: 'JavaScript',
  mjs: 'JavaScript',
  cjs: 'JavaScript',
  node: 'JavaScript',
  java: 'Java',
  c: 'C',
  h: 'C',
  'c++': 'C++',
  cpp: 'C++',
  cxx: 'C++',
  hpp: 'C++',
  'c#': 'C#',
  csharp: 'C#',
  cs: 'C#',
  go: 'Go',
  golang: 'Go',
  rust: 'Rust',
  rs: 'Rust',
  ruby: 'Ruby',
  rb: 'Ruby',
  php: 'PHP',
  swift: 'Swift',
  kotlin: 'Kotlin',
  kt: 'Kotlin',
  scala: 'Scala',
  r: 'R',
  shell: 'Shell',
  sh: 'Shell',
  bash: 'Shell',
  zsh: 'Shell',
  console: 'Shell',
  powershell: 'PowerShell',
  ps1: 'PowerShell',
  html: 'HTML',
  xhtml: 'HTML',
  css: 'CSS',
  scss: 'CSS',
  json: 'JSON',
  jsonc: 'JSON',
  yaml: 'YAML',
  yml: 'YAML',
  xml: 'XML',
  markdown: 'Markdown',
  md: 'Markdown',
};

/** Ordered: more specific languages before the ones they resemble. */
const HEURISTICS: Array<[CodeFormat, RegExp]> = [
  ['SQL', /\b(SELECT\s[\s\S]+?\sFROM\s|INSERT\s+INTO\s|UPDATE\s+\w+\s+SET\s|DELETE\s+FROM\s|CREATE\s+(TABLE|INDEX|VIEW)\s|DROP\s+TABLE\s)/i],
  ['HTML', /<(!DOCTYPE\s+html|html|head|body|div|span|p|a\s|ul|table)\b[^>]*>/i],
  ['PHP', /<\?php|\$\w+\s*=.*;\s*$/m],
  [
    'Python',
    /^\s*(def\s+\w+\s*\(.*\)\s*(->\s*[\w[\], .]+)?:|class\s+\w+(\(.*\))?:|from\s+[\w.]+\s+import\s|import\s+\w+\s*$|if\s+__name__\s*==)|\bprint\(|\belif\b/m,
  ],
  ['Java', /\bpublic\s+(static\s+)?(final\s+)?(class|void|interface)\b|System\.out\.print/],
  ['C#', /\busing\s+System\b|\bnamespace\s+\w+|Console\.Write(Line)?\(/],
  ['Go', /^\s*package\s+\w+\s*$|\bfunc\s+(\(\w+\s+\*?\w+\)\s*)?\w+\s*\(|:=\s*/m],
  ['Rust', /\bfn\s+\w+\s*(<[^>]*>)?\s*\(|\blet\s+mut\b|\bimpl\b.*\{|println!\(/],
  ['TypeScript', /\b(interface|type)\s+\w+\s*(=|\{)|:\s*(string|number|boolean|void|unknown|any)\b|\bas\s+const\b|\bimport\s+type\b/],
  ['JavaScript', /\b(const|let|var)\s+\w+\s*=|\bfunction\s*\w*\s*\(|=>|console\.log\(|\brequire\(|\bexport\s+(default|const|function)\b/],
  ['C++', /#include\s*<(iostream|vector|string|map)>|std::|\bcout\s*<</],
  ['C', /#include\s*<\w+\.h>|\bprintf\s*\(|\bint\s+main\s*\(/],
  ['Ruby', /^\s*(def\s+\w+[?!]?\s*(\(.*\))?\s*$|end\s*$|puts\s)/m],
  ['Shell', /^\s*(#!\/bin\/(ba)?sh|\$\s+\w+|(sudo|apt-get|npm|pip|cd|ls|echo|export|curl)\s)/m],
  ['CSS', /^\s*[.#]?[\w-]+(\s*[,>+~]\s*[.#]?[\w-]+)*\s*\{[^}]*:[^}]*\}/m],
];

export function detectLanguage(tag: string, code: string): CodeFormat | undefined {
  const name = tag.trim().split(/[\s{]/)[0]!.toLowerCase();
  if (name) return TAGS[name];
  return HEURISTICS.find(([, re]) => re.test(code))?.[0];
}

/** Languages of all fenced blocks in the text, in order. */
export function codeBlocks(text: string): Array<CodeFormat | undefined> {
  return [...text.matchAll(/(^|\n)[ \t]*(```|~~~)([^\n]*)\n([\s\S]*?)\n[ \t]*\2/g)].map((m) => detectLanguage(m[3]!, m[4]!));
}

export const containsCode = defineCheck({
  id: 'default.containsCode',
  parameters: z.strictObject({
    format: z.pipe(
      z.string(),
      z.transform((v, ctx) => {
        const found = CODE_FORMATS.find((f) => f.toLowerCase() === v.toLowerCase()) ?? TAGS[v.toLowerCase()];
        if (found) return found;
        ctx.issues.push({ code: 'custom', message: `expected one of ${CODE_FORMATS.join(', ')}`, input: v });
        return z.NEVER;
      }),
    ),
  }),
  run(input, params) {
    const blocks = codeBlocks(input.text);
    const formats = [...new Set(blocks.filter((b): b is CodeFormat => b !== undefined))];
    const verdict = formats.includes(params.format);
    return {
      verdict,
      explanation: verdict
        ? `The text contains ${params.format} code.`
        : blocks.length === 0
          ? 'The text contains no code block.'
          : `The text contains no ${params.format} code${formats.length ? ` (found: ${formats.join(', ')})` : ''}.`,
      data: { formats },
    };
  },
});
