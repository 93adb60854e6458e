// The review queue's keys (products/templates/products/review/queue.html): j/k or the
// arrows move between lines, Enter confirms the proposed product, r rejects it, 1-5
// choose a candidate, n opens the new-product page, / goes to the "any product" field.
// Each key clicks the line's own button or link: without this script the page's plain
// forms do the same.
(function () {
  "use strict";

  function lines() {
    return Array.prototype.slice.call(document.querySelectorAll(".pf-review-line"));
  }

  var current = -1;

  function select(index) {
    var all = lines();
    if (!all.length) {
      return;
    }
    index = Math.max(0, Math.min(index, all.length - 1));
    if (all[current]) {
      all[current].classList.remove("pf-review-current");
    }
    current = index;
    all[current].classList.add("pf-review-current");
    all[current].scrollIntoView({block: "nearest"});
  }

  function press(key) {
    var line = lines()[current];
    var target = line && line.querySelector('[data-key="' + key + '"]');
    if (!target) {
      return false;
    }
    if (target.tagName === "INPUT") {
      target.focus();
    } else {
      target.click();
    }
    return true;
  }

  function suggest(input, url, list) {
    var timer = null;
    input.addEventListener("input", function () {
      clearTimeout(timer);
      var q = input.value.trim();
      if (q.length < 2) {
        return;
      }
      timer = setTimeout(function () {
        fetch(url + "?q=" + encodeURIComponent(q), {credentials: "same-origin"})
          .then(function (response) { return response.ok ? response.json() : {results: []}; })
          .then(function (data) {
            list.textContent = "";
            data.results.forEach(function (product) {
              var option = document.createElement("option");
              option.value = product.own_code;
              option.label = product.name;
              list.appendChild(option);
            });
          });
      }, 200);
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var queue = document.getElementById("pf-review");
    if (!queue) {
      return;
    }
    var list = document.getElementById("pf-review-products");
    document.querySelectorAll('input[data-key="code"]').forEach(function (input) {
      suggest(input, queue.dataset.productsUrl, list);
    });
    // After a decision the page comes back at the line decided on (#line-N): the line
    // now there is the next one to decide.
    var found = /^#line-(\d+)$/.exec(window.location.hash);
    select(found ? parseInt(found[1], 10) : 0);
    lines().forEach(function (line, index) {
      line.addEventListener("click", function () { select(index); });
    });
    document.addEventListener("keydown", function (event) {
      if (event.altKey || event.ctrlKey || event.metaKey) {
        return;
      }
      var tag = event.target.tagName;
      // Typing in a field, or a focused button or link: the browser's own keys.
      if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA" || tag === "BUTTON" || tag === "A") {
        if (event.key === "Escape") {
          event.target.blur();
        }
        return;
      }
      var handled = true;
      if (event.key === "j" || event.key === "ArrowDown") {
        select(current + 1);
      } else if (event.key === "k" || event.key === "ArrowUp") {
        select(current - 1);
      } else if (event.key === "Enter") {
        handled = press("confirm");
      } else if (event.key === "r") {
        handled = press("reject");
      } else if (event.key === "n") {
        handled = press("new");
      } else if (event.key === "/") {
        handled = press("code");
      } else if (/^[1-5]$/.test(event.key)) {
        handled = press(event.key);
      } else {
        handled = false;
      }
      if (handled) {
        event.preventDefault();
      }
    });
  });
})();
