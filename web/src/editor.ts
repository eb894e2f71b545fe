// A small floating input for editing one matrix cell. What is typed goes to
// `commit`, which answers null (applied) or why the value is refused: the
// editor then stays open at the cell with that message.

let open: HTMLFormElement | null = null;

export function closeEditor(): void {
  open?.remove();
  open = null;
}

/** `restore` gives the focus back to where the edit started (the editor closed by Enter or Escape). */
export function openEditor(
  e: MouseEvent,
  label: string,
  value: number,
  commit: (raw: string) => string | null,
  restore?: () => void,
): void {
  closeEditor();
  const form = document.createElement("form");
  form.className = "cell-editor";
  form.dataset.testid = "cell-editor";
  form.noValidate = true;
  // A text field (decimal keypad on phones): a number field hides what was typed
  // when it is not a number, so the message could not say what was wrong.
  form.innerHTML = `<label>${label} <input type="text" inputmode="decimal" autocomplete="off" spellcheck="false" value="${Number(value.toFixed(4))}" aria-label="${label}" aria-describedby="cell-editor-error"></label><button type="submit">set</button>
    <p class="cell-editor-error" id="cell-editor-error" data-testid="cell-editor-error" role="alert" hidden></p>`;
  form.style.left = `${Math.min(e.clientX + 8, innerWidth - 300)}px`;
  form.style.top = `${Math.min(e.clientY + 8, innerHeight - 110)}px`;
  const input = form.querySelector("input")!;
  const error = form.querySelector<HTMLElement>(".cell-editor-error")!;
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const why = commit(input.value);
    if (why === null) {
      closeEditor();
      restore?.();
      return;
    }
    error.textContent = why;
    error.hidden = false;
    input.setAttribute("aria-invalid", "true");
    input.focus();
    input.select();
  });
  input.addEventListener("input", () => {
    error.hidden = true;
    input.removeAttribute("aria-invalid");
  });
  input.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape") {
      closeEditor();
      restore?.();
    }
    ev.stopPropagation();
  });
  // Leaving the editor closes it, unless it shows why a value was refused.
  input.addEventListener("blur", () =>
    setTimeout(() => {
      if (open === form && error.hidden && !form.contains(document.activeElement)) closeEditor();
    }, 150),
  );
  document.body.append(form);
  open = form;
  input.focus();
  input.select();
}
