// The labelling page's keyboard and note keeper (annotate/ui.py puts it in the page once).
// Streamlit's shortcuts stay silent while focus is in a field, a checkbox included; this keeps
// them working and routes keys typed for the code picker to it, whatever the page is doing:
// - `C` opens the code picker, `M` the note, Esc leaves any field;
// - a key typed for the note goes to the note: from M, a click or a key in it until Esc, Tab
//   or a click elsewhere, also when a rerun redrew the field and took its focus (never to a
//   shortcut; the redrawn field gets back what this browser kept of the note);
// - a key pressed on a checkbox or radio (after a mouse click) goes to the shortcuts;
// - one action at a time: after a shortcut key, a click on a code or a button, or Enter in the
//   picker the page runs; keys and such clicks that come meanwhile wait for that run to end,
//   then go on in order, keys typed for the picker to the picker (never to a shortcut or
//   another control; an empty query does nothing); a held click is dropped if the item
//   changed meanwhile (it was meant for the one on screen);
// - every change to the note is kept in this browser (localStorage) until the page says the
//   database holds it (`.nlce-note-state`): a reload, a server restart (keys typed while the
//   server is away go into the greyed-out field, the key typed as it greys out included) or a
//   closed tab loses nothing, and closing the tab with text not stored yet asks first.
(() => {
  if (window.nlceKeyboard) return;
  window.nlceKeyboard = true;
  const doc = document;
  const isText = (t) => t && (t.isContentEditable || t.tagName === "TEXTAREA"
    || t.tagName === "SELECT" || (t.tagName === "INPUT"
      && !["checkbox", "radio", "button", "submit"].includes(t.type)));
  const isChoice = (t) => t && t.tagName === "INPUT" && (t.type === "checkbox"
    || t.type === "radio");
  const picker = () => doc.querySelector(".st-key-lbl_codepick input");
  const noteBox = () => doc.querySelector(".st-key-lbl_note_ textarea");
  const running = () => !!doc.querySelector('[data-testid="stApp"][data-test-script-state="running"]');
  const setValue = (el, value) => {  // as if typed: React sees an input event
    Object.getOwnPropertyDescriptor(Object.getPrototypeOf(el), "value").set.call(el, value);
    el.dispatchEvent(new Event("input", { bubbles: true }));
  };
  const itemShown = () => (doc.querySelector(".nlce-note-state") || { dataset: {} }).dataset.item;
  const isShortcut = (e) => e.key.length === 1 && ((doc.querySelector(".nlce-keys")
    || { dataset: {} }).dataset.shortcuts || "").includes(e.key.toUpperCase());

  // ------------------------------------------------------------------ one action at a time
  // Streamlit starts a new run for each key or click at once and stops the one before, which
  // may then never do what its key asked (3, a click on a code and S within 0.1 s lost the 3,
  // or two saves raced: issue 34). So a run in flight holds what comes next in `held`.
  let waitSince = 0;  // a run asked for by this page is in flight
  let sawRun = false;
  const held = [];
  const takeOff = () => { waitSince = Date.now(); sawRun = false; };
  new MutationObserver((changes) => {  // also a run too short for the 40 ms poll below
    if (changes.some((c) => c.oldValue === "running" || c.target.dataset.testScriptState
      === "running")) sawRun = true;
  }).observe(doc.body, { subtree: true, attributes: true, attributeOldValue: true,
    attributeFilter: ["data-test-script-state"] });
  const shortcut = (e) => {
    if (isShortcut(e)) takeOff();
    doc.body.dispatchEvent(new KeyboardEvent("keydown", { key: e.key, code: e.code,
      keyCode: e.keyCode, which: e.which, bubbles: true, cancelable: true }));
  };
  const control = (t) => {  // a checkbox (a code) or a button of the label page, or null
    const c = t && t.closest && t.closest('[class*="st-key-lbl_"]');
    if (!c || isText(t)) return null;
    const button = t.closest("button");  // in a checkbox's label: its help icon
    if (c.querySelector('[data-testid="stCheckbox"]')) return !button && t.closest("label") && c;
    return button && c;
  };
  const keyClass = (el) => [...el.classList].find((c) => c.startsWith("st-key-lbl_"));
  let replaying = false;
  let echo = { key: "", until: 0 };
  doc.addEventListener("click", (e) => {
    const c = !replaying && control(e.target);
    if (!c) return;
    const key = keyClass(c), swallow = () => { e.preventDefault(); e.stopImmediatePropagation(); };
    if (!e.isTrusted) {  // a checkbox whose click was held clicks itself again a moment later
      if (key === echo.key && Date.now() < echo.until) swallow();
      return;
    }
    if (!waitSince) { setTimeout(takeOff, 0); return; }  // (the label's click reaches its box)
    swallow();
    held.push({ click: key, item: itemShown() });
    echo = { key, until: Date.now() + 1000 };
  }, true);
  const replayClick = (h) => {
    const c = doc.querySelector("." + CSS.escape(h.click));
    const target = c && c.querySelector('input[type="checkbox"], button');
    if (!target || h.item !== itemShown()) return;
    takeOff();
    replaying = true;
    target.click();
    replaying = false;
  };

  // ------------------------------------------------------------------ the code picker
  let picking = false;  // the picker has the keys (from C or a click in it until Esc)
  const toPicker = (e) => {  // one key for the picker, whatever has focus now
    const box = picker();
    if (!box) { picking = false; return false; }
    if (doc.activeElement !== box) box.focus();
    if (e.key === "Escape") { picking = false; box.blur(); return true; }
    if (e.key === "Enter") { submit(box); return true; }
    if (e.key === "Backspace") { setValue(box, box.value.slice(0, -1)); return true; }
    if (e.key.length === 1) { setValue(box, box.value + e.key); return true; }
    return false;
  };
  const submit = (box) => {
    if (!box.value.trim()) { setValue(box, ""); return; }  // no "select all" from the keys
    takeOff();
    box.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", code: "Enter",
      keyCode: 13, which: 13, bubbles: true, cancelable: true }));
  };
  const apply = (e) => {  // a held key or click, applied as if it had not waited
    if (e.click) { replayClick(e); return; }
    const t = doc.activeElement;
    if (picking) { toPicker(e); return; }
    if (noting && !isText(t)) { toNote(e); return; }
    if (isText(t)) {
      if (e.key === "Escape") t.blur();
      else if (e.key === "Backspace") setValue(t, t.value.slice(0, -1));
      else if (e.key.length === 1) setValue(t, t.value + e.key);
      return;
    }
    const key = e.key.toLowerCase();
    if (key === "c" && picker()) { picking = true; picker().focus(); }
    else if (key === "m" && noteBox()) { noting = true; noteBox().focus(); }
    else if (e.key.length === 1) shortcut(e);
  };
  let endedAt = 0;
  setInterval(() => {  // the run is over: what came meanwhile goes on
    if (!waitSince) return;
    if (running()) { sawRun = true; endedAt = 0; return; }
    const now = Date.now();
    if (!sawRun && now - waitSince < 1500) return;
    // the server empties the picker once it has the query; that empty box can reach the page
    // a moment after the run ends, and keys put in before it would be wiped with the query
    endedAt = endedAt || now;
    if (picker() && picker().value !== "" && now - endedAt < 1000) return;
    waitSince = 0;
    endedAt = 0;
    if (picking && picker()) picker().focus();
    while (held.length && !waitSince) apply(held.shift());
  }, 40);

  doc.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || !e.isTrusted) return;
    const t = e.target;
    const stop = () => { e.preventDefault(); e.stopImmediatePropagation(); };
    if (waitSince && !(t === noteBox() && !held.length)) {  // (typing in the note goes on)
      held.push({ key: e.key, code: e.code, keyCode: e.keyCode, which: e.which });
      stop();
      return;
    }
    if (e.key === "Escape" || (e.key === "Tab" && t === noteBox())) noting = false;
    else if (t === noteBox() && t.disabled) {  // greyed out under the typist (the server went
      noting = true;                          // away) before its focus moved: it takes no key
      stop();
      toNote(e);
      return;
    } else if (t === noteBox()) { noting = true; picking = false; }
    else if (noting && !isText(t)) { stop(); toNote(e); return; }  // the field was redrawn
    if (t === picker()) {
      picking = true;
      if (e.key === "Enter" || e.key === "Escape") { stop(); toPicker(e); }
      return;
    }
    if (picking && !isText(t)) { if (toPicker(e)) stop(); return; }
    if (e.key === "Escape" && isText(t)) { t.blur(); return; }
    if (isChoice(t) && e.key.length === 1 && e.key !== " ") {  // after a click on a code
      stop();
      t.blur();
      shortcut(e);
      return;
    }
    if (isText(t)) return;
    const key = e.key.toLowerCase();
    if (key === "c" && picker()) { stop(); picking = true; picker().focus(); }
    else if (key === "m" && noteBox()) { stop(); noting = true; noteBox().focus(); }
    else if (isShortcut(e)) takeOff();  // on its way to Streamlit's shortcut
  }, true);
  doc.addEventListener("pointerdown", (e) => {  // (a greyed-out field gets no mousedown)
    if (e.target !== picker()) picking = false;
    // a click that closes Streamlit's "connection error" box is no move away from the note
    if (!e.target.closest('[data-testid="stDialog"]')) noting = e.target === noteBox();
  }, true);
  doc.addEventListener("change", (e) => {
    if (isChoice(e.target)) setTimeout(() => e.target.blur(), 0);
  }, true);

  // ------------------------------------------------------------------ the note
  const hash = (text) => {  // FNV-1a over UTF-16 code units (annotate/ui.py: note_hash)
    let h = 0x811c9dc5;
    for (let i = 0; i < text.length; i++) {
      h ^= text.charCodeAt(i);
      h = Math.imul(h, 0x01000193) >>> 0;
    }
    return h.toString(16);
  };
  const state = () => doc.querySelector(".nlce-note-state");
  const draftKey = (s) => `nlce-note:${s.dataset.user}:${s.dataset.item}`;
  let typedAt = 0;
  let pushedAt = 0;
  let pushes = 0;
  const commit = (box) => {  // Streamlit takes a text area's value when it loses focus
    const focused = doc.activeElement === box;
    const start = box.selectionStart, end = box.selectionEnd;
    if (!focused) box.focus();
    box.blur();
    if (focused) { box.focus(); box.setSelectionRange(start, end); }
  };
  const STALE_MS = 10 * 60 * 1000;
  const readDraft = (key) => {  // {text, base: the stored note's hash when typed, at}
    try { return JSON.parse(localStorage.getItem(key)); } catch (err) { return null; }
  };
  // A draft may go (back) to the server only while the database holds what it held when the
  // draft was typed, or something this browser sent: never over another tab's newer save.
  const mine = (draft, stored) => draft.base === stored || (draft.sent || []).includes(stored);
  const unsent = () => {
    const s = state();
    if (!s) return false;
    const draft = readDraft(draftKey(s));
    return !!draft && hash(draft.text) !== s.dataset.stored && mine(draft, s.dataset.stored);
  };
  const noteSent = (text) => {  // remember what this browser sent for the shown item
    const s = state(), draft = s && readDraft(draftKey(s));
    if (!draft) return;
    draft.sent = [...(draft.sent || []), hash(text)].slice(-20);
    localStorage.setItem(draftKey(s), JSON.stringify(draft));
  };
  // The note's limit (`.nlce-note-state` data-max), in characters as the database counts them:
  // Unicode code points (an emoji such as U+1F44D is one; JavaScript's length counts it twice).
  // A key or drop past it is refused, a paste is cut to fit, and either is said.
  const noteMax = () => Number((state() || { dataset: {} }).dataset.max) || Infinity;
  const chars = (text) => { let n = 0; for (const _ of text) n += 1; return n; };
  const charsAfter = (text, a, b, added) =>  // once `added` replaces text.slice(a, b)
    chars(text) - chars(text.slice(a, b)) + chars(added);
  let noticeTimer = null;
  const notice = (text, stay = false) => {  // a message over the page, like Streamlit's toasts
    let box = doc.querySelector(".nlce-notice");
    if (!box) {
      box = doc.createElement("div");
      box.className = "nlce-notice";
      box.setAttribute("role", "status");
      doc.body.appendChild(box);
    }
    box.textContent = text;
    box.hidden = false;
    clearTimeout(noticeTimer);
    if (!stay) noticeTimer = setTimeout(() => { box.hidden = true; }, 10000);
  };
  doc.addEventListener("paste", (e) => {
    const box = noteBox(), s = state();
    if (e.target !== box || !s || !e.clipboardData) return;
    const text = [...e.clipboardData.getData("text/plain").replace(/\r\n?/g, "\n")];
    const a = box.selectionStart, b = box.selectionEnd;
    const room = Math.max(noteMax() - charsAfter(box.value, a, b, ""), 0);
    if (text.length <= room) return;
    e.preventDefault();
    const put = text.slice(0, room).join("");
    setValue(box, box.value.slice(0, a) + put + box.value.slice(b));
    box.setSelectionRange(a + put.length, a + put.length);
    notice(s.dataset.cut.replace("{dropped}", String(text.length - room)));
  }, true);
  doc.addEventListener("beforeinput", (e) => {  // a key, Enter or a drop past the limit
    const box = noteBox(), s = state();
    if (e.target !== box || !s || !e.cancelable || !e.inputType.startsWith("insert")
        || e.inputType === "insertFromPaste") return;  // (a paste: above)
    const added = e.data ?? (e.dataTransfer ? e.dataTransfer.getData("text/plain") : "\n");
    if (charsAfter(box.value, box.selectionStart, box.selectionEnd, added) > noteMax()) {
      e.preventDefault();
      notice(s.dataset.full);
    }
  }, true);
  let pause = null;
  let pushing = false;
  doc.addEventListener("input", (e) => {
    const box = e.target, s = state();
    if (box !== noteBox() || !s || pushing) return;
    if (chars(box.value) > noteMax()) {  // past the limit where no beforeinput could stop it
      notice(s.dataset.full);             // (an input method's composition): cut to it
      setValue(box, [...box.value].slice(0, noteMax()).join(""));
      return;
    }
    const before = readDraft(draftKey(s));
    localStorage.setItem(draftKey(s), JSON.stringify({ text: box.value,
      base: before ? before.base : s.dataset.stored, sent: before ? before.sent : [],
      at: Date.now() }));
    typedAt = Date.now();
    pushes = 0;
    clearTimeout(pause);
    pause = setTimeout(() => {
      if (doc.activeElement === box) { noteSent(box.value); commit(box); }
    }, 600);
  }, true);
  let shown = "";
  // While the server is away, a line in the interface's language says that typing is kept
  // (Streamlit's own "Connection error" box is in English only: it has no translations).
  let away = false;
  setInterval(() => {
    const app = doc.querySelector('[data-testid="stApp"]'), s = state();
    const connected = !app || app.dataset.testConnectionState === "CONNECTED";
    if (!connected && !away && s) { away = true; notice(s.dataset.away, true); }
    if (connected && away) {
      away = false;
      const box = doc.querySelector(".nlce-notice");
      if (box && box.textContent === s?.dataset.away) box.hidden = true;
    }
  }, 300);
  setInterval(() => {  // a draft the database does not hold yet goes (back) to the server
    const s = state(), box = noteBox();
    if (s && s.dataset.item && `${s.dataset.user}:${s.dataset.item}` !== shown) {
      shown = `${s.dataset.user}:${s.dataset.item}`;  // where a new tab starts (ui.last_item)
      doc.cookie = `nlce_item=${shown}; path=/; max-age=43200; SameSite=Strict`
        + (location.protocol === "https:" ? "; Secure" : "");
    }
    if (!s || !box || running() || box.disabled) return;
    const key = draftKey(s), kept = readDraft(key);
    if (!kept || typeof kept.text !== "string") return;
    const now = Date.now(), draft = kept.text;
    if (hash(draft) === s.dataset.stored || (!mine(kept, s.dataset.stored)
                                             && now - kept.at > STALE_MS)) {
      localStorage.removeItem(key);  // arrived; or old, and someone saved another note since
      return;
    }
    if (!mine(kept, s.dataset.stored)) return;
    if (now - typedAt < 1500 || now - pushedAt < 2000 || pushes >= 5) return;
    if (doc.activeElement !== box && isText(doc.activeElement)) return;  // busy elsewhere
    pushedAt = now;
    pushes += 1;
    if (pushes === 3 && sessionStorage.getItem("nlce-reload:" + key) !== hash(draft)) {
      // sent twice and still not stored: a page that reconnected to a restarted server may
      // not send until reloaded; a reload does (once per draft)
      sessionStorage.setItem("nlce-reload:" + key, hash(draft));
      location.reload();
      return;
    }
    noteSent(draft);
    pushing = true;
    setValue(box, draft + " ");  // twice: React sends on a change, even to the same text
    setValue(box, draft);
    pushing = false;
    commit(box);
  }, 300);
  // Keys for the note that reached the page: the field was redrawn (remounted) under the
  // typist and lost its focus. They go on in the note, where the caret was, after what this
  // browser kept of it (the new field shows what the server had, maybe less).
  let noting = false;
  let caret = [0, 0];
  for (const kind of ["keyup", "mouseup", "input"]) {
    doc.addEventListener(kind, (e) => {
      if (e.target === noteBox()) caret = [e.target.selectionStart, e.target.selectionEnd];
    }, true);
  }
  const toNote = (e) => {
    const box = noteBox(), s = state();
    if (!box) { noting = false; return; }
    box.focus();
    const kept = s && readDraft(draftKey(s));
    if (kept && typeof kept.text === "string" && kept.text !== box.value
        && mine(kept, s.dataset.stored)) setValue(box, kept.text);
    const text = box.value;
    let [a, b] = caret.map((i) => Math.min(i, text.length));
    let put = e.key === "Enter" ? "\n" : e.key.length === 1 ? e.key : "";
    if (e.key === "Backspace" && a === b && a > 0) a -= 1;
    else if (!put) { box.setSelectionRange(a, b); return; }  // an arrow, Shift, ...
    if (charsAfter(text, a, b, put) > noteMax()) {
      put = "";
      notice(s.dataset.full);
    }
    setValue(box, text.slice(0, a) + put + text.slice(b));
    box.setSelectionRange(a + put.length, a + put.length);
    caret = [a + put.length, a + put.length];
  };
  // Streamlit sends the note when the field loses its focus (a pause, a click elsewhere, the
  // field greyed out as the server goes away): whatever it sends is this browser's, so a draft
  // typed on after it still goes to the server once it holds that text (not "another tab's").
  doc.addEventListener("focusout", (e) => {
    if (e.target === noteBox()) noteSent(e.target.value);
  }, true);
  const leave = () => {
    const box = noteBox();
    if (box && unsent()) { noteSent(box.value); box.blur(); }
  };
  doc.addEventListener("visibilitychange", () => { if (doc.hidden) leave(); });
  window.addEventListener("pagehide", leave);
  window.addEventListener("beforeunload", (e) => {
    if (unsent()) { e.preventDefault(); e.returnValue = ""; }
  });
})();
