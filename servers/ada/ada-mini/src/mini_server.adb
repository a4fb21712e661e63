with Ada.Exceptions;
with Ada.Real_Time; use Ada.Real_Time;
with Ada.Streams;   use Ada.Streams;
with Ada.Text_IO;

with GNAT.Sockets;  use GNAT.Sockets;

with Mini_HTTP;
with Mini_Responses;

package body Mini_Server is

   FD_Set_Size : constant := 1024;   --  FD_SETSIZE of glibc

   Accepts_Per_Round : constant := 64;
   Out_Size          : constant := 8 * 1024;
   Idle_Timeout      : constant Time_Span := Seconds (Idle_Seconds);
   Linger_Timeout    : constant Time_Span := Seconds (2);
   Accept_Backoff    : constant Time_Span := Milliseconds (100);

   type Connection_State is
     (Free,        --  slot unused
      Open,        --  reading requests and answering them
      Closing,     --  last response queued: close once it is written
      Lingering);  --  write side shut down: discard input until the
                   --  peer closes (so a reset cannot destroy the last
                   --  response), or until Linger_Timeout

   --  Per-connection state.  The buffers are allocated with the slot the
   --  first time it is used and kept for later connections.
   type Connection is record
      Socket    : Socket_Type := No_Socket;
      State     : Connection_State := Free;
      Deadline  : Time := Time_First;

      --  Unprocessed input is In_Buf (In_First .. In_Last).
      In_Buf    : Stream_Element_Array (1 .. Mini_HTTP.Header_Limit);
      In_First  : Stream_Element_Offset := 1;
      In_Last   : Stream_Element_Offset := 0;
      Scanned   : Stream_Element_Offset := 0;
      --  Input before this index holds no end of request head.
      Body_Left : Stream_Element_Count := 0;
      --  Bytes of a request body still to skip.
      Held      : Boolean := False;
      --  Complete requests wait in In_Buf for room in Out_Buf.

      --  Pending output is Out_Buf (Out_First .. Out_Last).
      Out_Buf   : Stream_Element_Array (1 .. Out_Size);
      Out_First : Stream_Element_Offset := 1;
      Out_Last  : Stream_Element_Offset := 0;
   end record;

   type Connection_Access is access Connection;

   Slots : array (1 .. Max_Clients) of Connection_Access;
   High  : Natural := 0;   --  no slot above High has ever been used

   Now : Time := Clock;    --  time of the current round

   procedure Log (Message : String) is
   begin
      Ada.Text_IO.Put_Line
        (Ada.Text_IO.Standard_Error, "ada-mini: " & Message);
   end Log;

   function Would_Block (E : Ada.Exceptions.Exception_Occurrence)
     return Boolean
   is (Resolve_Exception (E) = Resource_Temporarily_Unavailable);

   function Has_Output (C : Connection) return Boolean is
     (C.Out_First <= C.Out_Last);

   function Has_Input_Room (C : Connection) return Boolean is
     (C.In_Last < C.In_Buf'Last or else C.In_First > C.In_Buf'First);

   -----------------
   -- Reset/Close --
   -----------------

   procedure Close (C : in out Connection) is
   begin
      begin
         Close_Socket (C.Socket);
      exception
         when Socket_Error =>
            null;
      end;
      C.Socket    := No_Socket;
      C.State     := Free;
      C.In_First  := 1;
      C.In_Last   := 0;
      C.Scanned   := 0;
      C.Body_Left := 0;
      C.Held      := False;
      C.Out_First := 1;
      C.Out_Last  := 0;
   end Close;

   --  All output written on a connection that must end: shut down the
   --  write side (the client sees the end of the stream) and linger.
   procedure Begin_Linger (C : in out Connection) is
   begin
      Shutdown_Socket (C.Socket, Shut_Write);
      C.State    := Lingering;
      C.Deadline := Now + Linger_Timeout;
      C.In_First := 1;
      C.In_Last  := 0;
   exception
      when Socket_Error =>
         Close (C);
   end Begin_Linger;

   ------------
   -- Output --
   ------------

   --  Append a response; the caller made sure it fits.
   procedure Queue (C : in out Connection; Bytes : Stream_Element_Array) is
   begin
      C.Out_Buf (C.Out_Last + 1 .. C.Out_Last + Bytes'Length) := Bytes;
      C.Out_Last := C.Out_Last + Bytes'Length;
   end Queue;

   --  Room for one more response at the end of Out_Buf, moving the
   --  pending bytes to the front if needed.
   function Make_Room (C : in out Connection) return Boolean is
      Pending : constant Stream_Element_Count := C.Out_Last - C.Out_First + 1;
   begin
      if C.Out_Buf'Last - C.Out_Last >= Mini_Responses.Max_Length then
         return True;
      elsif C.Out_First > 1 then
         C.Out_Buf (1 .. Pending) := C.Out_Buf (C.Out_First .. C.Out_Last);
         C.Out_First := 1;
         C.Out_Last  := Pending;
         return C.Out_Buf'Last - C.Out_Last >= Mini_Responses.Max_Length;
      else
         return False;
      end if;
   end Make_Room;

   --  Write as much pending output as the socket takes (partial writes
   --  keep the rest for the next writable event).  Socket_Error other
   --  than "would block" propagates: the caller closes the connection.
   procedure Flush (C : in out Connection) is
      Last : Stream_Element_Offset;
   begin
      if Has_Output (C) then
         begin
            Send_Socket
              (C.Socket, C.Out_Buf (C.Out_First .. C.Out_Last), Last);
            C.Out_First := Last + 1;
         exception
            when E : Socket_Error =>
               if not Would_Block (E) then
                  raise;
               end if;
         end;
         if not Has_Output (C) then
            C.Out_First := 1;
            C.Out_Last  := 0;
         end if;
      end if;
      if C.State = Closing and then not Has_Output (C) then
         Begin_Linger (C);
      end if;
   end Flush;

   -----------
   -- Input --
   -----------

   --  Queue a response that ends the connection and stop reading requests.
   procedure Fail (C : in out Connection; Response : Mini_Responses.Kind) is
   begin
      Queue (C, Mini_Responses.Get
                  (Response, Mini_Responses.Close, Head_Only => False).all);
      C.State := Closing;
   end Fail;

   --  Answer one parsed request.
   procedure Answer (C : in out Connection; Info : Mini_HTTP.Request_Info) is
      use Mini_Responses;
      use type Mini_HTTP.Method_Kind;
      Keep     : Boolean;
      Field    : Connection_Field;
      Response : Kind;
   begin
      case Info.Status is
         when Mini_HTTP.Malformed =>
            Fail (C, Bad_Request);
            return;
         when Mini_HTTP.Bad_Version =>
            Fail (C, Version_Not_Supported);
            return;
         when Mini_HTTP.Ok =>
            null;
      end case;
      if Info.Has_Body_Coding then
         --  A chunked body cannot be skipped without decoding it.
         Fail (C, Not_Implemented);
         return;
      end if;

      if Info.HTTP_1_0 then
         Keep := Info.Wants_Keep_Alive and not Info.Wants_Close;
      else
         Keep := not Info.Wants_Close;
      end if;
      Field := (if not Keep then Close
                elsif Info.HTTP_1_0 then Keep_Alive
                else None);

      Response := (if Info.Method = Mini_HTTP.Other then Method_Not_Allowed
                   elsif Info.Is_Api then Greeting
                   else Not_Found);

      Queue (C, Get (Response, Field, Info.Method = Mini_HTTP.HEAD).all);
      C.Body_Left := Info.Content_Length;   --  skipped, never read
      if not Keep then
         C.State := Closing;
      end if;
   end Answer;

   --  Answer every complete request in the input buffer, in order, while
   --  there is room for the answers (else set Held).
   procedure Process_Input (C : in out Connection) is
      use Mini_HTTP;
      Head_End : Stream_Element_Offset;
      Skip     : Stream_Element_Count;
   begin
      C.Held := False;
      while C.State = Open loop
         --  The rest of a request body.
         if C.Body_Left > 0 then
            Skip := Stream_Element_Count'Min
              (C.Body_Left, C.In_Last - C.In_First + 1);
            C.In_First  := C.In_First + Skip;
            C.Body_Left := C.Body_Left - Skip;
            exit when C.Body_Left > 0;
            C.Scanned := 0;
         end if;

         --  Blank lines between requests are ignored.
         while C.In_First <= C.In_Last
           and then (C.In_Buf (C.In_First) = CR
                     or else C.In_Buf (C.In_First) = LF)
         loop
            C.In_First := C.In_First + 1;
         end loop;
         exit when C.In_First > C.In_Last;
         if not Make_Room (C) then
            C.Held := True;   --  resumed once output drains
            exit;
         end if;

         Head_End := Find_Head_End
           (C.In_Buf (C.In_First .. C.In_Last),
            Stream_Element_Offset'Max (C.Scanned, C.In_First));
         if Head_End = 0 then
            if C.In_First = C.In_Buf'First
              and then C.In_Last = C.In_Buf'Last
            then
               Fail (C, Mini_Responses.Header_Too_Large);
            else
               C.Scanned := C.In_Last + 1;
            end if;
            exit;
         end if;

         Answer (C, Parse (C.In_Buf (C.In_First .. Head_End)));
         C.In_First := Head_End + 1;
         C.Scanned  := 0;
      end loop;

      if C.In_First > C.In_Last then
         C.In_First := 1;
         C.In_Last  := 0;
         C.Scanned  := 0;
      end if;
   end Process_Input;

   --  Answer what the input buffer holds and write the answers; as long
   --  as the socket takes all the output, go on with held requests (the
   --  socket may have no more input to wake the selector up with).
   procedure Serve (C : in out Connection) is
   begin
      loop
         Process_Input (C);
         Flush (C);
         exit when not C.Held or else Has_Output (C) or else C.State /= Open;
      end loop;
   end Serve;

   --  One read on a readable connection.
   procedure Receive (C : in out Connection) is
      Last    : Stream_Element_Offset;
      Pending : Stream_Element_Count;
   begin
      if C.State = Lingering then
         declare
            Discard : Stream_Element_Array (1 .. 4096);
         begin
            Receive_Socket (C.Socket, Discard, Last);
            if Last < Discard'First then
               Close (C);   --  the peer closed too
            end if;
         end;
         return;
      end if;

      --  Move unprocessed input to the front when the end is reached.
      if C.In_Last = C.In_Buf'Last and then C.In_First > 1 then
         Pending := C.In_Last - C.In_First + 1;
         C.In_Buf (1 .. Pending) := C.In_Buf (C.In_First .. C.In_Last);
         C.Scanned := (if C.Scanned = 0 then 0
                       else C.Scanned - C.In_First + 1);
         C.In_First := 1;
         C.In_Last  := Pending;
      end if;

      Receive_Socket (C.Socket, C.In_Buf (C.In_Last + 1 .. C.In_Buf'Last),
                      Last);
      if Last <= C.In_Last then
         Close (C);   --  end of stream: the client closed
         return;
      end if;
      C.In_Last  := Last;
      C.Deadline := Now + Idle_Timeout;
      Serve (C);
   exception
      when E : Socket_Error =>
         if not Would_Block (E) then
            raise;
         end if;
   end Receive;

   ---------------------
   -- New connections --
   ---------------------

   Non_Blocking : Request_Type := (Non_Blocking_IO, True);
   --  Control_Socket wants a variable.

   Accept_Paused_Until : Time := Time_First;
   Refused             : Natural := 0;

   procedure Accept_Connections (Listener : Socket_Type) is
      Socket  : Socket_Type;
      Address : Sock_Addr_Type;
      Slot    : Natural;
   begin
      for Round in 1 .. Accepts_Per_Round loop
         begin
            Accept_Socket (Listener, Socket, Address);
         exception
            when E : Socket_Error =>
               if not Would_Block (E) then
                  --  EMFILE and the like: the backlog stays readable,
                  --  so pause accepting instead of spinning.
                  Log ("accept: " & Ada.Exceptions.Exception_Message (E));
                  Accept_Paused_Until := Now + Accept_Backoff;
               end if;
               return;
         end;

         Slot := 0;
         if To_C (Socket) < FD_Set_Size then
            for I in Slots'Range loop
               if Slots (I) = null or else Slots (I).State = Free then
                  Slot := I;
                  exit;
               end if;
            end loop;
         end if;

         if Slot = 0 then
            --  Over the documented limit: refuse this connection.
            Close_Socket (Socket);
            Refused := Refused + 1;
            if Refused = 1 or else Refused mod 1000 = 0 then
               Log ("connection limit reached; refused so far:"
                    & Natural'Image (Refused));
            end if;
         else
            begin
               Control_Socket (Socket, Non_Blocking);
               Set_Socket_Option
                 (Socket, IP_Protocol_For_TCP_Level, (No_Delay, True));
               if Slots (Slot) = null then
                  Slots (Slot) := new Connection;
               end if;
               Slots (Slot).Socket   := Socket;
               Slots (Slot).State    := Open;
               Slots (Slot).Deadline := Now + Idle_Timeout;
               High := Natural'Max (High, Slot);
            exception
               when Socket_Error =>
                  Close_Socket (Socket);
            end;
         end if;
      end loop;
   end Accept_Connections;

   ------------
   -- Listen --
   ------------

   function Listen
     (Address : Sock_Addr_Type; Backlog : Positive) return Socket_Type
   is
      Listener : Socket_Type;
   begin
      Create_Socket (Listener, Family => Address.Family);
      Set_Socket_Option (Listener, Socket_Level, (Reuse_Address, True));
      Bind_Socket (Listener, Address);
      Listen_Socket (Listener, Length => Backlog);
      Control_Socket (Listener, Non_Blocking);
      return Listener;
   end Listen;

   -----------
   -- Serve --
   -----------

   procedure Serve (Listener : Socket_Type) is
      Selector   : Selector_Type;
      Read_Set   : Socket_Set_Type;
      Write_Set  : Socket_Set_Type;
      Status     : Selector_Status;
      Next_Sweep : Time := Clock + Seconds (1);
      Listening  : Boolean;
   begin
      Create_Selector (Selector);

      loop
         --  Sets for this round: the listener, every connection that can
         --  take input, every connection with output pending.
         Empty (Read_Set);
         Empty (Write_Set);
         Listening := Now >= Accept_Paused_Until;
         if Listening then
            Set (Read_Set, Listener);
         end if;
         for I in 1 .. High loop
            declare
               C : Connection renames Slots (I).all;
            begin
               if C.State /= Free then
                  if C.State = Lingering
                    or else (C.State = Open and then Has_Input_Room (C))
                  then
                     Set (Read_Set, C.Socket);
                  end if;
                  if Has_Output (C) then
                     Set (Write_Set, C.Socket);
                  end if;
               end if;
            end;
         end loop;

         begin
            Check_Selector (Selector, Read_Set, Write_Set, Status,
                            Timeout => (if Listening then 1.0 else 0.1));
         exception
            when E : Socket_Error =>
               --  EINTR and the like: try again next round.
               Log ("select: " & Ada.Exceptions.Exception_Message (E));
               Status := Expired;
         end;
         Now := Clock;

         if Status = Completed then
            --  Service every ready connection once.
            for I in 1 .. High loop
               declare
                  C : Connection renames Slots (I).all;
               begin
                  if C.State /= Free and then Is_Set (Write_Set, C.Socket)
                  then
                     Flush (C);
                     if C.Held and then not Has_Output (C) then
                        Serve (C);   --  requests held back for room
                     end if;
                  end if;
                  if C.State /= Free and then Is_Set (Read_Set, C.Socket)
                  then
                     Receive (C);
                  end if;
               exception
                  when Socket_Error =>
                     Close (C);   --  reset, broken pipe...: this one only
                  when E : others =>
                     Log ("closing a connection after "
                          & Ada.Exceptions.Exception_Information (E));
                     Close (C);
               end;
            end loop;

            if Listening and then Is_Set (Read_Set, Listener) then
               Accept_Connections (Listener);
            end if;
         end if;

         --  Once a second: close idle and lingering connections.
         if Now >= Next_Sweep then
            for I in 1 .. High loop
               if Slots (I).State /= Free and then Now >= Slots (I).Deadline
               then
                  Close (Slots (I).all);
               end if;
            end loop;
            Next_Sweep := Now + Seconds (1);
         end if;
      end loop;
   end Serve;

end Mini_Server;
