/** A small multipart/form-data parser for the fakes (enough for audio and file uploads). */

export interface MultipartFile {
  name: string;
  filename: string;
  contentType: string;
  data: Buffer;
}

export interface MultipartForm {
  /** Text fields by name (the last one wins for repeated names, see `entries`). */
  fields: Record<string, string>;
  /** Every text field in order, repeated names included (e.g. `timestamp_granularities[]`). */
  entries: Array<{ name: string; value: string }>;
  files: MultipartFile[];
}

export function parseMultipart(body: Buffer, contentType: string): MultipartForm | undefined {
  const m = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  const b = m?.[1] ?? m?.[2];
  if (!b) return undefined;
  const delimiter = Buffer.from(`--${b}`);
  const form: MultipartForm = { fields: {}, entries: [], files: [] };
  let pos = body.indexOf(delimiter);
  while (pos !== -1) {
    let start = pos + delimiter.length;
    if (body[start] === 0x2d && body[start + 1] === 0x2d) break; // closing `--boundary--`
    if (body[start] === 0x0d && body[start + 1] === 0x0a) start += 2;
    const next = body.indexOf(Buffer.concat([Buffer.from('\r\n'), delimiter]), start);
    if (next === -1) break;
    const part = body.subarray(start, next);
    const split = part.indexOf('\r\n\r\n');
    if (split !== -1) {
      const head = part.subarray(0, split).toString('utf8');
      const data = part.subarray(split + 4);
      const disposition = /content-disposition:([^\r\n]*)/i.exec(head)?.[1] ?? '';
      const name = /\bname="([^"]*)"/i.exec(disposition)?.[1] ?? '';
      const filename = /\bfilename="([^"]*)"/i.exec(disposition)?.[1];
      const type = /content-type:\s*([^\r\n]*)/i.exec(head)?.[1]?.trim();
      if (filename !== undefined) {
        form.files.push({ name, filename, contentType: type ?? 'application/octet-stream', data: Buffer.from(data) });
      } else {
        const value = data.toString('utf8');
        form.fields[name] = value;
        form.entries.push({ name, value });
      }
    }
    pos = next + 2;
  }
  return form;
}
