// Export the current view as SVG or PNG (the SVG carries its own styles).

function download(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** What an export says above its picture: the view's title and its caption as plain text. */
export interface ExportText {
  title: string;
  caption: string;
}

const SVG_NS = "http://www.w3.org/2000/svg";

/** Splits `text` into lines of at most `chars` characters, at spaces. */
function wrap(text: string, chars: number): string[] {
  const lines: string[] = [];
  let line = "";
  for (const w of text.split(/\s+/).filter(Boolean)) {
    if (line && line.length + 1 + w.length > chars) {
      lines.push(line);
      line = w;
    } else line = line ? `${line} ${w}` : w;
  }
  if (line) lines.push(line);
  return lines;
}

/** The picture's size in user units (its viewBox: the page may show it scaled). */
function viewSize(svg: SVGSVGElement): [number, number] {
  const vb = (svg.getAttribute("viewBox") ?? "").split(/\s+/).map(Number);
  return vb.length === 4 && vb[2] > 0
    ? [vb[2], vb[3]]
    : [Number(svg.getAttribute("width")), Number(svg.getAttribute("height"))];
}

export function svgText(svg: SVGSVGElement, text?: ExportText): string {
  const clone = svg.cloneNode(true) as SVGSVGElement;
  let [w, h] = viewSize(svg);
  if (text) {
    // The title and caption go above the picture, so a saved file explains itself.
    const body = document.createElementNS(SVG_NS, "g");
    for (const c of [...clone.childNodes])
      if (!(c instanceof Element && (c.tagName === "defs" || c.tagName === "style")))
        body.append(c);
    w = Math.max(w, 480);
    const lines = wrap(text.caption, Math.floor(w / 6.6));
    const head = 30 + lines.length * 16 + 10;
    body.setAttribute("transform", `translate(0,${head})`);
    const t = document.createElementNS(SVG_NS, "text");
    t.setAttribute("x", "8");
    t.setAttribute("y", "20");
    t.setAttribute("style", "font: 600 16px system-ui, sans-serif; fill: #1b1b1b");
    t.setAttribute("data-export", "title");
    t.textContent = text.title;
    const cap = document.createElementNS(SVG_NS, "text");
    cap.setAttribute("style", "font: 12px system-ui, sans-serif; fill: #333");
    cap.setAttribute("data-export", "caption");
    lines.forEach((l, k) => {
      const span = document.createElementNS(SVG_NS, "tspan");
      span.setAttribute("x", "8");
      span.setAttribute("y", String(40 + k * 16));
      span.textContent = l;
      cap.append(span);
    });
    const titleEl = document.createElementNS(SVG_NS, "title");
    titleEl.textContent = text.title;
    clone.append(titleEl, t, cap, body);
    h += head;
  }
  clone.setAttribute("width", String(w));
  clone.setAttribute("height", String(h));
  clone.setAttribute("viewBox", `0 0 ${w} ${h}`);
  // Canvas matrices (inside <foreignObject>) become <image>s of their pixels.
  const live = svg.querySelectorAll("foreignObject");
  clone.querySelectorAll("foreignObject").forEach((fo, k) => {
    const canvas = live[k]?.querySelector("canvas");
    const img = document.createElementNS("http://www.w3.org/2000/svg", "image");
    for (const a of ["x", "y", "width", "height"])
      if (fo.hasAttribute(a)) img.setAttribute(a, fo.getAttribute(a)!);
    if (canvas) img.setAttribute("href", canvas.toDataURL("image/png"));
    img.setAttribute("preserveAspectRatio", "none");
    fo.replaceWith(img);
  });
  clone.setAttribute("xmlns", "http://www.w3.org/2000/svg");
  clone.setAttribute("xmlns:xlink", "http://www.w3.org/1999/xlink");
  const bg = document.createElementNS("http://www.w3.org/2000/svg", "rect");
  bg.setAttribute("width", "100%");
  bg.setAttribute("height", "100%");
  bg.setAttribute("fill", "#fff");
  clone.insertBefore(bg, clone.firstChild);
  return new XMLSerializer().serializeToString(clone);
}

export function exportSvg(svg: SVGSVGElement, name: string, text?: ExportText): void {
  download(new Blob([svgText(svg, text)], { type: "image/svg+xml" }), `${name}.svg`);
}

export async function exportPng(
  svg: SVGSVGElement,
  name: string,
  text?: ExportText,
  scale = 2,
): Promise<void> {
  const src = svgText(svg, text);
  const size = /<svg[^>]*?\swidth="([\d.]+)"[^>]*?\sheight="([\d.]+)"/.exec(src);
  const w = Number(size?.[1] ?? svg.getAttribute("width")),
    h = Number(size?.[2] ?? svg.getAttribute("height"));
  const url = URL.createObjectURL(new Blob([src], { type: "image/svg+xml" }));
  try {
    const img = new Image();
    img.width = w;
    img.height = h;
    await new Promise<void>((resolve, reject) => {
      img.onload = () => resolve();
      img.onerror = () => reject(new Error("could not rasterise the SVG"));
      img.src = url;
    });
    const canvas = document.createElement("canvas");
    canvas.width = Math.ceil(w * scale);
    canvas.height = Math.ceil(h * scale);
    const c2d = canvas.getContext("2d")!;
    c2d.fillStyle = "#fff";
    c2d.fillRect(0, 0, canvas.width, canvas.height);
    c2d.scale(scale, scale);
    c2d.drawImage(img, 0, 0, w, h);
    const blob = await new Promise<Blob | null>((resolve) => canvas.toBlob(resolve, "image/png"));
    if (blob) download(blob, `${name}.png`);
  } finally {
    URL.revokeObjectURL(url);
  }
}
