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

export function svgText(svg: SVGSVGElement): string {
  const clone = svg.cloneNode(true) as SVGSVGElement;
  // Canvas matrices (inside <foreignObject>) become <image>s of their pixels.
  const live = svg.querySelectorAll("foreignObject");
  clone.querySelectorAll("foreignObject").forEach((fo, k) => {
    const canvas = live[k]?.querySelector("canvas");
    const img = document.createElementNS("http://www.w3.org/2000/svg", "image");
    for (const a of ["x", "y", "width", "height"]) if (fo.hasAttribute(a)) img.setAttribute(a, fo.getAttribute(a)!);
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

export function exportSvg(svg: SVGSVGElement, name: string): void {
  download(new Blob([svgText(svg)], { type: "image/svg+xml" }), `${name}.svg`);
}

export async function exportPng(svg: SVGSVGElement, name: string, scale = 2): Promise<void> {
  const w = Number(svg.getAttribute("width")), h = Number(svg.getAttribute("height"));
  const url = URL.createObjectURL(new Blob([svgText(svg)], { type: "image/svg+xml" }));
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
