#pragma once

namespace trpc {

class FiberThreadModel;

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
  friend class FiberThreadModel;  // links the tasks of one reactor iteration into a chain
  Task* next_ = nullptr;
};

}  // namespace trpc
