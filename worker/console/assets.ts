/**
 * The console's one script (about 4 KB): zip upload with progress, the live build log, a running
 * task's live log, and copy-to-clipboard buttons. Every page works without it except those two conveniences' live parts.
 */
export const CONSOLE_JS = String.raw`
(() => {
  const csrf = document.querySelector('meta[name="csrf-token"]')?.content || "";
  const $ = (sel, root = document) => root.querySelector(sel);

  for (const btn of document.querySelectorAll("[data-copy]")) {
    btn.addEventListener("click", async () => {
      const text = new URL(btn.dataset.copy, location.origin).href;
      try { await navigator.clipboard.writeText(text); btn.textContent = "Copied"; }
      catch { window.prompt("Copy the link", text); }
    });
  }

  const deploy = $("#deploy");
  if (deploy) {
    const input = $("#zip", deploy), drop = $(".drop", deploy), bar = $("progress", deploy);
    const state = $("#deploy-state"), timeline = $("#build-timeline"), log = $("#build-log");
    const say = (text) => { state.textContent = text; };
    const follow = async (buildId) => {
      for (;;) {
        const res = await fetch("/console/builds/" + buildId + ".json", { headers: { accept: "application/json" } });
        if (!res.ok) { say("could not read the build (" + res.status + ")"); return; }
        const b = await res.json();
        $("#build-progress").hidden = false;
        timeline.textContent = b.timeline.map((t) => t.status + " " + t.time).join("\n");
        log.textContent = b.log.join("\n");
        log.scrollTop = log.scrollHeight;
        say("Build " + buildId + ": " + b.status);
        if (b.status === "SUCCESS") {
          // The function can run now: offer Invoke without a reload.
          const form = $("#invoke-form"), needs = $("#invoke-needs-build");
          if (form) form.hidden = false;
          if (needs) needs.hidden = true;
        }
        if (b.status === "SUCCESS" || b.status === "FAILED") { deploy.dataset.done = b.status; return; }
        await new Promise((r) => setTimeout(r, 1000));
      }
    };
    const upload = (file) => {
      if (!file) return;
      const xhr = new XMLHttpRequest();
      xhr.open("POST", deploy.dataset.action);
      xhr.setRequestHeader("content-type", "application/octet-stream");
      xhr.setRequestHeader("x-csrf-token", csrf);
      bar.hidden = false; bar.value = 0; delete deploy.dataset.done;
      xhr.upload.onprogress = (e) => { if (e.lengthComputable) { bar.max = e.total; bar.value = e.loaded; say("Uploading " + Math.round((100 * e.loaded) / e.total) + "%"); } };
      xhr.onload = () => {
        let body = {};
        try { body = JSON.parse(xhr.responseText); } catch {}
        if (xhr.status !== 201) { say("Refused: " + ((body.error && body.error.message) || xhr.status)); deploy.dataset.done = "REFUSED"; return; }
        say("Uploaded; build " + body.id + " queued"); follow(body.id);
      };
      xhr.onerror = () => say("The upload failed (network)");
      xhr.send(file);
    };
    input.addEventListener("change", () => upload(input.files[0]));
    drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
    drop.addEventListener("dragleave", () => drop.classList.remove("over"));
    drop.addEventListener("drop", (e) => { e.preventDefault(); drop.classList.remove("over"); upload(e.dataTransfer.files[0]); });
    if (deploy.dataset.follow) follow(deploy.dataset.follow);
  }

  // A running task's log, live: the lines so far replace the page's, then each new one is added.
  const taskLog = $("#task-log");
  if (taskLog && taskLog.dataset.live && window.EventSource) {
    const state = $("#task-log-state"), events = new EventSource(taskLog.dataset.live);
    let lines = [];
    const show = () => { taskLog.textContent = lines.join("\n"); taskLog.scrollTop = taskLog.scrollHeight; };
    events.addEventListener("line", (e) => { lines.push(e.data); show(); });
    events.addEventListener("dropped", (e) => { lines.push("[… " + JSON.parse(e.data).lines + " lines dropped: this page fell behind …]"); show(); });
    events.addEventListener("end", (e) => {
      events.close();
      state.textContent = "finished (status " + JSON.parse(e.data).status + "): reload for the result";
    });
    events.onerror = () => { if (events.readyState === EventSource.CLOSED) state.textContent = "not live; reload"; };
    events.onopen = () => { lines = []; state.textContent = "live"; };
  }
})();
`;
