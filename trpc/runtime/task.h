#pragma once

#include <cstddef>

namespace trpc {

class TaskChain;

/// A unit of work handed to ThreadModel::Submit() (a request to handle). Intrusive: the
/// submitter embeds it in an object it allocates anyway (the request's context), so submitting
/// allocates nothing and a model can link tasks into a chain.
class Task {
 public:
  /// Runs the work. May destroy the object that holds the task.
  virtual void Run() = 0;

 protected:
  Task() = default;
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() = default;  // not owned through Task*: whoever embeds it owns it

 private:
  friend class TaskChain;
  Task* next_ = nullptr;
};

/// The tasks a thread model collects during one reactor iteration, in submission order
/// (intrusive: links Task::next_). One thread only.
class TaskChain {
 public:
  /// Appends `task`; true if the chain was empty (the caller then arms whatever runs it).
  bool Append(Task* task) {
    bool first = head_ == nullptr;
    if (first) {
      head_ = task;
    } else {
      tail_->next_ = task;
    }
    tail_ = task;
    return first;
  }
  /// Takes the whole chain (its first task, or null), leaving it empty.
  Task* TakeAll() {
    Task* first = head_;
    head_ = tail_ = nullptr;
    return first;
  }
  /// Unlinks `task` from the tasks after it and returns them (a chain's first task, or null).
  static Task* Detach(Task* task) {
    Task* rest = task->next_;
    task->next_ = nullptr;
    return rest;
  }
  /// The tasks in the chain that starts at `task` (O(length)).
  static size_t Count(const Task* task) {
    size_t n = 0;
    for (; task != nullptr; task = task->next_) ++n;
    return n;
  }
  /// The `n`th task after `task` (n = 0: `task`); the chain must be that long.
  static Task* Advance(Task* task, size_t n) {
    while (n-- > 0) task = task->next_;
    return task;
  }

 private:
  Task* head_ = nullptr;
  Task* tail_ = nullptr;
};

}  // namespace trpc
