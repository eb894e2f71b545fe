// A small floating number input for editing one matrix cell.

let open: HTMLFormElement | null = null;

export function closeEditor(): void {
  open?.remove();
  open = null;
}

export function openEditor(e: MouseEvent, label: string, value: number, commit: (v: number) => void): void {
  closeEditor();
  const form = document.createElement("form");
  form.className = "cell-editor";
  form.dataset.testid = "cell-editor";
  form.innerHTML = `<label>${label} <input type="number" step="any" value="${Number(value.toFixed(4))}" aria-label="${label}"></label><button type="submit">set</button>`;
  form.style.left = `${Math.min(e.clientX + 8, innerWidth - 230)}px`;
  form.style.top = `${Math.min(e.clientY + 8, innerHeight - 60)}px`;
  const input = form.querySelector("input")!;
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const v = Number(input.value);
    closeEditor();
    if (input.value.trim() !== "" && Number.isFinite(v)) commit(v);
  });
  input.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape") closeEditor();
    ev.stopPropagation();
  });
  input.addEventListener("blur", () => setTimeout(() => { if (open === form && !form.contains(document.activeElement)) closeEditor(); }, 150));
  document.body.append(form);
  open = form;
  input.focus();
  input.select();
}
